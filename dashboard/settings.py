"""Settings, every one from the environment.

With nothing set this is the embedded default of `make run`: DEBUG on,
SQLite and an embedded Redis (started by `manage.py up`) under `var/`.
Production sets DEBUG=0, SECRET_KEY, ALLOWED_HOSTS, DATABASE_URL, REDIS_URL.
"""
import ipaddress
import os
import re
import tempfile
from datetime import timedelta
from pathlib import Path

import environ
from csp.constants import NONE, SELF, UNSAFE_INLINE
from django.core.exceptions import ImproperlyConfigured

from dashboard.embedded_secret import embedded_secret_key
from dashboard.runtime.redis_urls import redis_settings, unix_url
from dashboard.wire.tasks import QUEUE as CELERY_QUEUE

env = environ.Env()

BASE_DIR = Path(__file__).resolve().parent.parent
# Everything the embedded default writes: database, Redis socket, collected static.
VAR_DIR = Path(env.str("SCHEDVIEW_VAR_DIR", default=str(BASE_DIR / "var")))

DEBUG = env.bool("DEBUG", default=True)
SECRET_KEY = env.str("SECRET_KEY", default="")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off")
    SECRET_KEY = embedded_secret_key(VAR_DIR / "secret-key")
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

# Cookies travel over HTTPS only outside DEBUG; the embedded default is plain http.
SESSION_COOKIE_SECURE = not DEBUG
CSRF_COOKIE_SECURE = not DEBUG
# No script of ours reads either cookie (forms carry the CSRF token), so none may.
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = True
# Off by default: whether to redirect and pin HTTPS depends on what terminates TLS.
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=False)
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=False)
# The kubelet probes over plain HTTP, inside the cluster: never redirected to HTTPS.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
# Behind a proxy that terminates TLS: the request header (as Django names it, e.g.
# HTTP_X_FORWARDED_PROTO) in which the proxy says "https". Empty: no proxy is trusted.
_proxy_ssl_header = env.str("SECURE_PROXY_SSL_HEADER", default="")
SECURE_PROXY_SSL_HEADER = (_proxy_ssl_header, "https") if _proxy_ssl_header else None

# Not "daphne": the web runs daphne itself (`up`, deploy/), and as an app it loads Twisted
# into every process that sets Django up (24 MiB each: the owner, the stand-in, the pools,
# Celery's) for a runserver none of them runs.
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.staticfiles",
    "django.contrib.humanize",  # thousands separators (intcomma) on every page
    "channels",
    "django_htmx",
    "template_partials",
    "ninja",  # the REST API docs' scripts served from here, not a CDN
    "axes",   # login throttling
    "csp",    # the Content-Security-Policy header
    "dashboard",   # the app: tables, pages, every process's command
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Outermost but for security: every answer carries the policy, refusals included.
    "csp.middleware.CSPMiddleware",
    # Before anything reads a body: one over SCHEDVIEW_MAX_BODY is a 413.
    "dashboard.web.middleware.body_limit.BodyLimitMiddleware",
    "dashboard.web.api.unknown.unknown_in_json",  # /api/ answers JSON, even Django's own 404/405
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Every statement of a request within SCHEDVIEW_DB_STATEMENT_TIMEOUT, the session's too.
    "dashboard.web.middleware.database_down.bounded_statements",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # A path no page serves: our 404 page, in DEBUG too (Django's lists every URL).
    "dashboard.web.middleware.not_found.our_not_found",
    # A database that is down: a prompt 503 naming the cause, pages and API alike.
    "dashboard.web.middleware.database_down.DatabaseDownMiddleware",
    # Every page needs a login; the REST API (its own token/session auth) is marked
    # login_not_required.
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, as django-axes asks: turns a locked-out login into its 429 page.
    "axes.middleware.AxesMiddleware",
]

# --- Content-Security-Policy (django-csp) ---------------------------------------------------
# Our own files only: the vendored htmx (django-htmx's static) and static/*.js, no inline
# script, no eval, nothing from another origin. Style attributes are allowed (style-src-attr):
# bars and countdowns set their width from data, and an attribute can neither run script nor
# load anything (img-src and font-src stay 'self'); <style> elements, which could hide or
# probe what a page shows, are not (htmx's injected indicator style is off: base.html).
# connect-src 'self' covers the live pages' websockets on the same host.
CONTENT_SECURITY_POLICY = {"DIRECTIVES": {
    "default-src": [SELF],
    "script-src": [SELF],
    "style-src": [SELF],
    "style-src-attr": [UNSAFE_INLINE],
    "img-src": [SELF, "data:"],   # data: for the API docs' (Swagger UI's) icons
    "connect-src": [SELF],
    "object-src": [NONE],
    "base-uri": [NONE],
    "form-action": [SELF],
    "frame-ancestors": [NONE],
}}

# Argon2id (dashboard/accounts.py); PBKDF2 verifies older hashes, rehashed at their next login.
PASSWORD_HASHERS = ["dashboard.accounts.Argon2idHasher",
                    "django.contrib.auth.hashers.PBKDF2PasswordHasher"]

# --- login throttling (django-axes) ---------------------------------------------------------
# Axes' backend first: it refuses a locked-out login before any password is checked. Three
# counts of wrong passwords within SCHEDVIEW_LOGIN_LOCKOUT seconds, each with its limit
# (dashboard/web/login_limits.py): a username from one address (SCHEDVIEW_LOGIN_FAILURES,
# so a person mistyping is locked out alone), a username from any address, an address for
# any username. A lock ends SCHEDVIEW_LOGIN_LOCKOUT seconds after the failures that made
# it; tries while locked out are refused and not counted, so knocking does not prolong it.
# Every failure is logged (logger axes.handlers.database, WARNING).
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend",
                           "django.contrib.auth.backends.ModelBackend"]
AXES_HANDLER = "dashboard.web.login_limits.LoginLimits"
AXES_FAILURE_LIMIT = env.int("SCHEDVIEW_LOGIN_FAILURES", default=5)
SCHEDVIEW_LOGIN_USER_FAILURES = env.int("SCHEDVIEW_LOGIN_USER_FAILURES", default=20)
SCHEDVIEW_LOGIN_ADDRESS_FAILURES = env.int("SCHEDVIEW_LOGIN_ADDRESS_FAILURES", default=30)
AXES_COOLOFF_TIME = timedelta(seconds=env.float("SCHEDVIEW_LOGIN_LOCKOUT", default=900.0))
if (min(AXES_FAILURE_LIMIT, SCHEDVIEW_LOGIN_USER_FAILURES, SCHEDVIEW_LOGIN_ADDRESS_FAILURES) < 1
        or AXES_COOLOFF_TIME <= timedelta(0)):
    raise ImproperlyConfigured("SCHEDVIEW_LOGIN_FAILURES, SCHEDVIEW_LOGIN_USER_FAILURES and "
                               "SCHEDVIEW_LOGIN_ADDRESS_FAILURES must be 1 or more and "
                               "SCHEDVIEW_LOGIN_LOCKOUT positive")
# In this order: LoginLimits reads the counts as pair, username, address.
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "username", "ip_address"]
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked.html"
# The log names the username tried and the address (axes masks both by default): who is
# guessing is what an operator reading it needs. Passwords are never logged.
AXES_SENSITIVE_PARAMETERS = []
# The address a login comes from: the peer's, or the one a trusted proxy forwarded
# (X-Forwarded-For, read from the right while the hops are SCHEDVIEW_TRUSTED_PROXIES:
# addresses or networks, comma-separated; none by default).
AXES_CLIENT_IP_CALLABLE = "dashboard.web.client_address.client_address"


def _networks(name):
    try:
        return [ipaddress.ip_network(item.strip()) for item in env.list(name, default=[])]
    except ValueError as error:
        raise ImproperlyConfigured(f"{name} must list addresses or networks (10.0.0.0/8), "
                                   f"comma-separated: {error}") from error


SCHEDVIEW_TRUSTED_PROXIES = _networks("SCHEDVIEW_TRUSTED_PROXIES")

# Bytes a request body may have (every route; Django's form limit is the same number).
SCHEDVIEW_MAX_BODY = env.int("SCHEDVIEW_MAX_BODY", default=2_621_440)
if SCHEDVIEW_MAX_BODY < 1:
    raise ImproperlyConfigured("SCHEDVIEW_MAX_BODY must be a positive number of bytes")
DATA_UPLOAD_MAX_MEMORY_SIZE = SCHEDVIEW_MAX_BODY

ROOT_URLCONF = "dashboard.urls"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "overview"
LOGOUT_REDIRECT_URL = "login"
ASGI_APPLICATION = "dashboard.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "dashboard.web.health.views.health_context",
                "dashboard.web.past.scrubber.moment_controls",
            ],
        },
    },
]

DATABASES = {
    "default": env.db_url("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'schedview.sqlite3'}"),
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Several processes write (the owner's batches, the web's sessions and audit): readers
    # and the writer work at once (WAL), a writer waits for the lock (timeout), and every
    # transaction takes the write lock when it begins (IMMEDIATE). A deferred one that read
    # first and wrote later got "database is locked" at once, without waiting, whenever
    # another process had written in between: a login's 503. synchronous=NORMAL: a commit
    # does not wait for the disk (WAL stays consistent; a power cut may lose the last ones).
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"timeout": 30, "transaction_mode": "IMMEDIATE",
         "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"})
    DATABASES["default"]["TEST"] = {
        "NAME": str(Path(tempfile.gettempdir()) / f"schedview-test-{os.getpid()}.sqlite3")}
elif DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # A database that does not answer fails a connection within this many seconds
    # (libpq's connect_timeout, at least 2), so a page says so at once (database_down.py).
    DATABASES["default"].setdefault("OPTIONS", {}).setdefault(
        "connect_timeout", env.int("SCHEDVIEW_DB_CONNECT_TIMEOUT", default=2))
    # A peer that vanished (a dropped route, a powered-off host) is noticed by TCP within
    # about 10 s rather than the kernel's 2 hours: keepalives on an idle connection,
    # tcp_user_timeout on data sent and never acknowledged. A server that accepts and
    # answers nothing is the client's to time (dashboard/runtime/db_deadline.py).
    for _option, _value in (("keepalives", 1), ("keepalives_idle", 5),
                            ("keepalives_interval", 2), ("keepalives_count", 3),
                            ("tcp_user_timeout", 10_000)):
        DATABASES["default"]["OPTIONS"].setdefault(_option, _value)
    # SCHEDVIEW_DB_POOL=N keeps up to N connections open in a pool (psycopg's): the web
    # turns it on (asgi.py), whose many short calls each opened one otherwise, and
    # PostgreSQL forks a backend per connection (5-25 ms on a busy 2-core machine). Off
    # elsewhere: a test run, which ends an event loop and its threads every test, left
    # pooled connections checked out until an 8-connection pool ran dry.
    _pool = env.int("SCHEDVIEW_DB_POOL", default=0)
    if _pool < 0:
        raise ImproperlyConfigured("SCHEDVIEW_DB_POOL must be 0 (no pool) or positive")
    if _pool:
        # A request waits at most SCHEDVIEW_DB_POOL_TIMEOUT seconds for a pooled connection:
        # while the database is down none comes, and the page must say so promptly.
        DATABASES["default"]["OPTIONS"]["pool"] = {
            "min_size": 1, "max_size": _pool,
            "timeout": env.float("SCHEDVIEW_DB_POOL_TIMEOUT", default=2.0)}
# The same backends, without Django's log of every statement while DEBUG is on
# (dashboard/runtime/db_backends).
DATABASES["default"]["ENGINE"] = {
    "django.db.backends.sqlite3": "dashboard.runtime.db_backends.sqlite3",
    "django.db.backends.postgresql": "dashboard.runtime.db_backends.postgresql",
}.get(DATABASES["default"]["ENGINE"], DATABASES["default"]["ENGINE"])
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# REDIS_URL names the Redis of Channels and Celery; redis_settings() derives
# REDIS_URL, CHANNEL_LAYERS, CELERY_BROKER_URL and CELERY_RESULT_BACKEND from it.
# Without it, `manage.py up` starts an embedded Redis on EMBEDDED_REDIS_SOCKET.
_redis_url = env.str("REDIS_URL", default="")
EMBEDDED_REDIS_SOCKET = None if _redis_url else VAR_DIR / "redis.sock"
globals().update(redis_settings(_redis_url or unix_url(EMBEDDED_REDIS_SOCKET)))

# Seconds an assumed pod lives after its binding finished (0: never expires).
SCHEDVIEW_CACHE_TTL = env.float("SCHEDVIEW_CACHE_TTL", default=30.0)
if SCHEDVIEW_CACHE_TTL < 0:
    raise ImproperlyConfigured("SCHEDVIEW_CACHE_TTL must be 0 (never expire) or positive")

# The leader lease between cache owners, with client-go's leader election defaults: a
# lease lives SCHEDVIEW_LEASE_DURATION seconds without a renewal (a standby takes it
# after that), the leader renews every SCHEDVIEW_LEASE_RETRY_PERIOD on a thread of its
# own and stops acting as leader when it could not renew for SCHEDVIEW_LEASE_RENEW_DEADLINE.
SCHEDVIEW_LEASE_DURATION = env.float("SCHEDVIEW_LEASE_DURATION", default=15.0)
SCHEDVIEW_LEASE_RENEW_DEADLINE = env.float("SCHEDVIEW_LEASE_RENEW_DEADLINE", default=10.0)
SCHEDVIEW_LEASE_RETRY_PERIOD = env.float("SCHEDVIEW_LEASE_RETRY_PERIOD", default=2.0)
if not (SCHEDVIEW_LEASE_DURATION > SCHEDVIEW_LEASE_RENEW_DEADLINE
        > SCHEDVIEW_LEASE_RETRY_PERIOD > 0):
    raise ImproperlyConfigured(
        "need SCHEDVIEW_LEASE_DURATION > SCHEDVIEW_LEASE_RENEW_DEADLINE > "
        f"SCHEDVIEW_LEASE_RETRY_PERIOD > 0, not {SCHEDVIEW_LEASE_DURATION}, "
        f"{SCHEDVIEW_LEASE_RENEW_DEADLINE} and {SCHEDVIEW_LEASE_RETRY_PERIOD}")

# --- the live feed ------------------------------------------------------------------------
# The cluster: a kubeconfig (the embedded default writes the simulated cluster's here),
# or the pod's own service account when running inside the cluster.
SCHEDVIEW_KUBECONFIG = Path(env.str("SCHEDVIEW_KUBECONFIG", default=str(VAR_DIR / "simcluster.kubeconfig")))
SCHEDVIEW_IN_CLUSTER = env.bool("SCHEDVIEW_IN_CLUSTER", default=False)
# The owner's first list (and every relist) streamed through the watch (kube-apiserver's
# watch-list, sendInitialEvents), so no list of every pod is held at once; a server that
# refuses it is listed in pages anyway.
SCHEDVIEW_WATCH_LIST = env.bool("SCHEDVIEW_WATCH_LIST", default=True)
# Seconds the owner's watch may say nothing (no event, no bookmark) before it is dropped and
# restarted from its last resourceVersion (issue 22): above a real API server's bookmark
# cadence, about a minute (shared/k8s-wire capture 55), so a merely quiet watch lives.
# Health warns "Watch silent for N s" once a watch has been silent this long.
SCHEDVIEW_WATCH_SILENCE = env.float("SCHEDVIEW_WATCH_SILENCE", default=75.0)
if not SCHEDVIEW_WATCH_SILENCE > 0:
    raise ImproperlyConfigured("SCHEDVIEW_WATCH_SILENCE must be a positive number of seconds, "
                               f"not {SCHEDVIEW_WATCH_SILENCE}")
# Seconds between runs of the expiry reaper, and of the cache/cluster comparer.
SCHEDVIEW_REAP_PERIOD = env.float("SCHEDVIEW_REAP_PERIOD", default=1.0)
SCHEDVIEW_COMPARE_PERIOD = env.float("SCHEDVIEW_COMPARE_PERIOD", default=60.0)
# The scheduling algorithm the extender asks (a SchedulerAlgorithm class, by dotted path).
SCHEDVIEW_ALGORITHM = env.str("SCHEDVIEW_ALGORITHM", default="scheduling.algorithm.DefaultAlgorithm")
# Seconds kube-scheduler's extender calls wait for the owner's answer.
SCHEDVIEW_EXTENDER_TIMEOUT = env.float("SCHEDVIEW_EXTENDER_TIMEOUT", default=5.0)
# host:port (IPv4 or a name) where the leading cache owner serves kube-scheduler's extender
# verbs (POST /extender/filter, bind, preempt); empty: no extender. Loopback by default:
# anyone who reaches it can bind and preempt, so open it wider only with a client CA.
SCHEDVIEW_EXTENDER_ADDRESS = env.str("SCHEDVIEW_EXTENDER_ADDRESS", default="127.0.0.1:8101")
# A listening socket of that address handed down by `manage.py up` to both owners (set by
# `up`, not by hand): the leader accepts on it, so no owner holds the port for itself.
SCHEDVIEW_EXTENDER_FD = env.int("SCHEDVIEW_EXTENDER_FD", default=None)
if SCHEDVIEW_EXTENDER_ADDRESS and not re.fullmatch(r"[^\s:]+:\d{1,5}",
                                                    SCHEDVIEW_EXTENDER_ADDRESS):
    raise ImproperlyConfigured("SCHEDVIEW_EXTENDER_ADDRESS must be host:port (or empty), "
                               f"not {SCHEDVIEW_EXTENDER_ADDRESS!r}")
# PEM files: with a certificate and its key the listener serves HTTPS; with a client CA it
# requires a client certificate signed by it (kube-scheduler's extender tlsConfig).
SCHEDVIEW_EXTENDER_CERT = env.str("SCHEDVIEW_EXTENDER_CERT", default="")
SCHEDVIEW_EXTENDER_KEY = env.str("SCHEDVIEW_EXTENDER_KEY", default="")
SCHEDVIEW_EXTENDER_CLIENT_CA = env.str("SCHEDVIEW_EXTENDER_CLIENT_CA", default="")
if bool(SCHEDVIEW_EXTENDER_CERT) != bool(SCHEDVIEW_EXTENDER_KEY):
    raise ImproperlyConfigured("SCHEDVIEW_EXTENDER_CERT and SCHEDVIEW_EXTENDER_KEY go together")
if SCHEDVIEW_EXTENDER_CLIENT_CA and not SCHEDVIEW_EXTENDER_CERT:
    raise ImproperlyConfigured("SCHEDVIEW_EXTENDER_CLIENT_CA needs SCHEDVIEW_EXTENDER_CERT and "
                               "SCHEDVIEW_EXTENDER_KEY: a client certificate is asked for over "
                               "HTTPS only")
# Seconds a filter or preempt naming a pod the owner's watch has not shown yet waits for it
# before it is refused (kube-scheduler's informer sees new pods first). Keep it under
# kube-scheduler's httpTimeout (5 s in deploy/), which gives up on the call; 0: refuse at once.
SCHEDVIEW_EXTENDER_UNSEEN_WAIT = env.float("SCHEDVIEW_EXTENDER_UNSEEN_WAIT", default=3.0)
if not 0 <= SCHEDVIEW_EXTENDER_UNSEEN_WAIT <= 10:
    raise ImproperlyConfigured("SCHEDVIEW_EXTENDER_UNSEEN_WAIT must be 0 to 10 seconds, not "
                               f"{SCHEDVIEW_EXTENDER_UNSEEN_WAIT}")
# Seconds a statement of a page or an API call may take on PostgreSQL (the server cancels
# it; a server that does not answer at all is given up a second later): past it the request
# answers 503 naming the database (0: unbounded).
SCHEDVIEW_DB_STATEMENT_TIMEOUT = env.float("SCHEDVIEW_DB_STATEMENT_TIMEOUT", default=5.0)
# Seconds one of the owner's database writes (a batch's transaction) may wait on
# PostgreSQL before its connection is dropped and the write retried on a new one; a large
# batch gets longer (dashboard/owner/projection.py: write_bound).
SCHEDVIEW_DB_WRITE_TIMEOUT = env.float("SCHEDVIEW_DB_WRITE_TIMEOUT", default=15.0)
if SCHEDVIEW_DB_STATEMENT_TIMEOUT < 0 or SCHEDVIEW_DB_WRITE_TIMEOUT <= 0:
    raise ImproperlyConfigured("SCHEDVIEW_DB_STATEMENT_TIMEOUT must be 0 (unbounded) or "
                               "positive and SCHEDVIEW_DB_WRITE_TIMEOUT positive, in seconds")

# Seconds the bind verb's Binding POST may take. kube-scheduler's httpTimeout must exceed it
# plus twice SCHEDVIEW_EXTENDER_TIMEOUT's worst case (the README says how to set it).
SCHEDVIEW_EXTENDER_BIND_TIMEOUT = env.float("SCHEDVIEW_EXTENDER_BIND_TIMEOUT", default=3.0)
# An assumed pod whose binding has not finished this many seconds after it was assumed is
# stuck (counted on the overview), and at SCHEDVIEW_BIND_DEADLINE it is forgotten.
SCHEDVIEW_BIND_STUCK_AFTER = env.float("SCHEDVIEW_BIND_STUCK_AFTER", default=10.0)
SCHEDVIEW_BIND_DEADLINE = env.float("SCHEDVIEW_BIND_DEADLINE", default=60.0)
if not 0 < SCHEDVIEW_BIND_STUCK_AFTER <= SCHEDVIEW_BIND_DEADLINE:
    raise ImproperlyConfigured("need 0 < SCHEDVIEW_BIND_STUCK_AFTER <= SCHEDVIEW_BIND_DEADLINE, "
                               f"not {SCHEDVIEW_BIND_STUCK_AFTER} and {SCHEDVIEW_BIND_DEADLINE}")
# How many times a bind is tried before the pod is forgotten (HiveD's PodBindAttempts).
SCHEDVIEW_BIND_ATTEMPTS = env.int("SCHEDVIEW_BIND_ATTEMPTS", default=3)

# --- health, probes, metrics (dashboard/readmodel/health.py, dashboard/runtime/probes.py) ---------------------
def _pair(name, default):
    """A "warn,fail" pair of thresholds: warn from the first, fail from the second."""
    values = env.list(name, cast=float, default=default)
    if len(values) != 2 or not 0 <= values[0] <= values[1]:
        raise ImproperlyConfigured(f"{name} must be two numbers warn,fail with "
                                   f"0 <= warn <= fail, not {values!r}")
    return tuple(values)


# Feed items the owner has yet to apply; changes the pages do not show yet (rows).
SCHEDVIEW_HEALTH_FEED_BACKLOG = _pair("SCHEDVIEW_HEALTH_FEED_BACKLOG", [1000, 20000])
# Seconds the cache is behind the watch events received: kube-scheduler's extender
# calls are answered from a view that old (the owner flushes every 100 ms).
SCHEDVIEW_HEALTH_FEED_LAG = _pair("SCHEDVIEW_HEALTH_FEED_LAG", [5, 30])
SCHEDVIEW_HEALTH_READ_MODEL_BACKLOG = _pair("SCHEDVIEW_HEALTH_READ_MODEL_BACKLOG", [5000, 50000])
# Assumed pods whose bind has not finished in time (the owner's `binds_stuck`).
SCHEDVIEW_HEALTH_STUCK_BINDS = _pair("SCHEDVIEW_HEALTH_STUCK_BINDS", [1, 10])
# Percent of the binds ended in the last SCHEDVIEW_HEALTH_WINDOW that were forgotten.
SCHEDVIEW_HEALTH_BIND_FAILURES = _pair("SCHEDVIEW_HEALTH_BIND_FAILURES", [10, 30])
# Percent of a warm pool's queue capacity taken by waiting claims; seconds its claims waited
# (the 99th percentile, beyond) and percent of them that expired, over SCHEDVIEW_HEALTH_WINDOW.
SCHEDVIEW_HEALTH_POOL_QUEUE = _pair("SCHEDVIEW_HEALTH_POOL_QUEUE", [50, 90])
SCHEDVIEW_HEALTH_POOL_WAIT = _pair("SCHEDVIEW_HEALTH_POOL_WAIT", [1, 5])
SCHEDVIEW_HEALTH_POOL_EXPIRED = _pair("SCHEDVIEW_HEALTH_POOL_EXPIRED", [10, 30])
# Seconds: the window over which scheduling progress (pods assumed or bound) is looked for
# while pending grows, and bind outcomes are counted.
SCHEDVIEW_HEALTH_WINDOW = env.float("SCHEDVIEW_HEALTH_WINDOW", default=60.0)
# Seconds after which the latest comparison is stale (default: three comparer periods).
SCHEDVIEW_HEALTH_COMPARER_STALE = env.float("SCHEDVIEW_HEALTH_COMPARER_STALE",
                                            default=3 * SCHEDVIEW_COMPARE_PERIOD)
if SCHEDVIEW_HEALTH_WINDOW <= 0 or SCHEDVIEW_HEALTH_COMPARER_STALE <= 0:
    raise ImproperlyConfigured("SCHEDVIEW_HEALTH_WINDOW and SCHEDVIEW_HEALTH_COMPARER_STALE "
                               "must be positive")
# host:port where `manage.py watch`, `manage.py pools` and the Celery worker serve /healthz,
# /readyz and /metrics for kubelet probes and Prometheus; empty: off.
SCHEDVIEW_PROBE_ADDRESS = env.str("SCHEDVIEW_PROBE_ADDRESS", default="")
if SCHEDVIEW_PROBE_ADDRESS and not re.fullmatch(r"[^\s:]+:\d{1,5}", SCHEDVIEW_PROBE_ADDRESS):
    raise ImproperlyConfigured("SCHEDVIEW_PROBE_ADDRESS must be host:port (or empty), "
                               f"not {SCHEDVIEW_PROBE_ADDRESS!r}")
# Seconds between health samples (the overview's charts), and how long samples are kept.
SCHEDVIEW_SAMPLE_PERIOD = env.float("SCHEDVIEW_SAMPLE_PERIOD", default=10.0)
SCHEDVIEW_SAMPLE_KEEP = env.float("SCHEDVIEW_SAMPLE_KEEP", default=48 * 3600.0)
if SCHEDVIEW_SAMPLE_PERIOD <= 0 or SCHEDVIEW_SAMPLE_KEEP <= 0:
    raise ImproperlyConfigured("SCHEDVIEW_SAMPLE_PERIOD and SCHEDVIEW_SAMPLE_KEEP must be "
                               "positive")

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "static"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

# --- Celery beat and tasks (dashboard/worker/tasks.py) -------------------------------------------
# Seconds a Binding POST (and the read-back after a 409) may take, and the first retry's
# delay (doubling, at most 2 s) until SCHEDVIEW_BIND_ATTEMPTS attempts in all.
SCHEDVIEW_BIND_TIMEOUT = env.float("SCHEDVIEW_BIND_TIMEOUT", default=5.0)
SCHEDVIEW_BIND_BACKOFF = env.float("SCHEDVIEW_BIND_BACKOFF", default=0.1)
# The history keeps the latest SCHEDVIEW_HISTORY_KEEP transitions (0: all of them), pruned
# every SCHEDVIEW_PRUNE_PERIOD seconds (dashboard/worker/history_retention.py).
SCHEDVIEW_HISTORY_KEEP = env.int("SCHEDVIEW_HISTORY_KEEP", default=1_000_000)
SCHEDVIEW_PRUNE_PERIOD = env.float("SCHEDVIEW_PRUNE_PERIOD", default=60.0)
if SCHEDVIEW_HISTORY_KEEP < 0 or SCHEDVIEW_PRUNE_PERIOD <= 0:
    raise ImproperlyConfigured("SCHEDVIEW_HISTORY_KEEP must be >= 0 (0: keep all) and "
                               "SCHEDVIEW_PRUNE_PERIOD > 0, not "
                               f"{SCHEDVIEW_HISTORY_KEEP} and {SCHEDVIEW_PRUNE_PERIOD}")
# Seconds between VACUUMs of the tables the owner rewrites, run where PostgreSQL's
# autovacuum does not cover them (dashboard/worker/vacuum.py; 0: never).
SCHEDVIEW_VACUUM_PERIOD = env.float("SCHEDVIEW_VACUUM_PERIOD", default=30.0)
if SCHEDVIEW_VACUUM_PERIOD < 0:
    raise ImproperlyConfigured("SCHEDVIEW_VACUUM_PERIOD must be >= 0 (0: never), "
                               f"not {SCHEDVIEW_VACUUM_PERIOD}")
# The owner checkpoints the whole cache every SCHEDVIEW_CHECKPOINT_PERIOD seconds (0: never):
# a moment of the past is read as the checkpoint before it plus at most this long of history
# (dashboard/readmodel/moment.py). Checkpoints are pruned with the history they need.
SCHEDVIEW_CHECKPOINT_PERIOD = env.float("SCHEDVIEW_CHECKPOINT_PERIOD", default=60.0)
if SCHEDVIEW_CHECKPOINT_PERIOD < 0:
    raise ImproperlyConfigured("SCHEDVIEW_CHECKPOINT_PERIOD must be >= 0 (0: no checkpoints), "
                               f"not {SCHEDVIEW_CHECKPOINT_PERIOD}")
# A static schedule (no django-celery-beat tables). Each run expires before the next
# is due, so runs queued while workers were busy or down are dropped, never fired at once.
CELERY_BEAT_SCHEDULE = {
    "reap": {"task": "worker.tasks.reap", "schedule": SCHEDVIEW_REAP_PERIOD,
             "options": {"expires": SCHEDVIEW_REAP_PERIOD * 0.9}},
    "compare": {"task": "worker.tasks.compare", "schedule": SCHEDVIEW_COMPARE_PERIOD,
                "options": {"expires": SCHEDVIEW_COMPARE_PERIOD * 0.9}},
    "prune-history": {"task": "worker.tasks.prune_history", "schedule": SCHEDVIEW_PRUNE_PERIOD,
                      "options": {"expires": SCHEDVIEW_PRUNE_PERIOD * 0.9}},
    "sample-health": {"task": "worker.tasks.sample_health",
                      "schedule": SCHEDVIEW_SAMPLE_PERIOD,
                      "options": {"expires": SCHEDVIEW_SAMPLE_PERIOD * 0.9}},
}
if SCHEDVIEW_VACUUM_PERIOD:
    CELERY_BEAT_SCHEDULE["vacuum"] = {"task": "worker.tasks.vacuum",
                                      "schedule": SCHEDVIEW_VACUUM_PERIOD,
                                      "options": {"expires": SCHEDVIEW_VACUUM_PERIOD * 0.9}}
# The embedded default schedules the simulated cluster's pending pods itself: `manage.py up`
# runs `manage.py standin` (a stand-in for kube-scheduler driving the extender), a period
# every this many seconds, so every state of the machine shows. 0: `up` runs no stand-in.
SCHEDVIEW_SCHEDULE_PERIOD = env.float("SCHEDVIEW_SCHEDULE_PERIOD", default=0.0)
# Extended resources the stand-in's fit filter ignores and leaves to the extender, as
# kube-scheduler's NodeResourcesFitArgs.ignoredResources does (capture 08 gpu-9): the
# demo's pod asking for one (dashboard/launcher/demo_scenes.py) passes the stand-in's
# filters and the extender, which checks every resource, answers that it waits.
SCHEDVIEW_STANDIN_IGNORED_RESOURCES = env.list("SCHEDVIEW_STANDIN_IGNORED_RESOURCES",
                                               default=["example.com/fpga"])
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
CELERY_TASK_DEFAULT_QUEUE = CELERY_QUEUE
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
# A task is acknowledged once it ran, and a worker that dies (SIGKILL, OOM, node loss)
# leaves its messages unacknowledged in Redis: kombu hands them out again
# SCHEDVIEW_BIND_REDELIVERY seconds after they were delivered (its visibility timeout,
# an hour by default), looking every 2 s. A message must never outlive it while its task
# still runs (it would run twice): each worker process holds one message at a time
# (prefetch 1), and a bind task stops itself within the timeout (tasks.BIND_TIME_LIMIT).
SCHEDVIEW_BIND_REDELIVERY = env.float("SCHEDVIEW_BIND_REDELIVERY", default=30.0)
if SCHEDVIEW_BIND_REDELIVERY < 5:
    raise ImproperlyConfigured("SCHEDVIEW_BIND_REDELIVERY must be at least 5 seconds, not "
                               f"{SCHEDVIEW_BIND_REDELIVERY}")
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Without the broker a running task could not be acknowledged, so it comes back anyway.
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": SCHEDVIEW_BIND_REDELIVERY,
                                   "unacked_restore_interval": 2,
                                   "unacked_restore_throttle": 1}
