"""Settings, every one from the environment.

With nothing set this is the embedded default of `make run`: DEBUG on,
SQLite and an embedded Redis (started by `manage.py up`) under `var/`.
Production sets DEBUG=0, SECRET_KEY, ALLOWED_HOSTS, DATABASE_URL, REDIS_URL.
"""
import os
from pathlib import Path
import re
import tempfile

import environ
from django.core.exceptions import ImproperlyConfigured

from dashboard.redis_urls import redis_settings, unix_url

env = environ.Env()

BASE_DIR = Path(__file__).resolve().parent.parent
# Everything the embedded default writes: database, Redis socket, collected static.
VAR_DIR = Path(env.str("SCHEDVIEW_VAR_DIR", default=str(BASE_DIR / "var")))

DEBUG = env.bool("DEBUG", default=True)
SECRET_KEY = env.str("SECRET_KEY", default="")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off")
    SECRET_KEY = "insecure-key-for-debug-only"
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

# Cookies travel over HTTPS only outside DEBUG; the embedded default is plain http.
SESSION_COOKIE_SECURE = not DEBUG
CSRF_COOKIE_SECURE = not DEBUG
# Off by default: whether to redirect and pin HTTPS depends on what terminates TLS.
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=False)
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=0)

INSTALLED_APPS = [
    "daphne",  # first: its runserver serves the ASGI application
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.staticfiles",
    "django.contrib.humanize",  # thousands separators (intcomma) on every page
    "channels",
    "django_htmx",
    "template_partials",
    "ninja",  # the REST API docs' scripts served from here, not a CDN
    "dashboard",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "dashboard.api.errors.json_errors",  # /api/ answers JSON, even Django's own 404/405
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Every page needs a login; the REST API (its own token/session auth) and the
    # extender (called by kube-scheduler) are marked login_not_required.
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

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
            ],
        },
    },
]

DATABASES = {
    "default": env.db_url("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'schedview.sqlite3'}"),
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Several processes write (the owner's batches, the web's audit): wait for the lock,
    # and let readers and the writer work at once. Tests put their database in a file,
    # so the processes they start share it.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"timeout": 30, "init_command": "PRAGMA journal_mode=WAL;"})
    DATABASES["default"]["TEST"] = {
        "NAME": str(Path(tempfile.gettempdir()) / f"schedview-test-{os.getpid()}.sqlite3")}
elif DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # SCHEDVIEW_DB_POOL=N keeps up to N connections open in a pool (psycopg's): the web
    # turns it on (asgi.py), whose many short calls each opened one otherwise, and
    # PostgreSQL forks a backend per connection (5-25 ms on a busy 2-core machine). Off
    # elsewhere: a test run, which ends an event loop and its threads every test, left
    # pooled connections checked out until an 8-connection pool ran dry.
    _pool = env.int("SCHEDVIEW_DB_POOL", default=0)
    if _pool < 0:
        raise ImproperlyConfigured("SCHEDVIEW_DB_POOL must be 0 (no pool) or positive")
    if _pool:
        DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
            "min_size": 1, "max_size": _pool, "timeout": 30}
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

# --- the live feed ------------------------------------------------------------------------
# The cluster: a kubeconfig (the embedded default writes the simulated cluster's here),
# or the pod's own service account when running inside the cluster.
SCHEDVIEW_KUBECONFIG = Path(env.str("SCHEDVIEW_KUBECONFIG", default=str(VAR_DIR / "simcluster.kubeconfig")))
SCHEDVIEW_IN_CLUSTER = env.bool("SCHEDVIEW_IN_CLUSTER", default=False)
# Seconds between runs of the expiry reaper, and of the cache/cluster comparer.
SCHEDVIEW_REAP_PERIOD = env.float("SCHEDVIEW_REAP_PERIOD", default=1.0)
SCHEDVIEW_COMPARE_PERIOD = env.float("SCHEDVIEW_COMPARE_PERIOD", default=60.0)
# The scheduling algorithm the extender asks (a SchedulerAlgorithm class, by dotted path).
SCHEDVIEW_ALGORITHM = env.str("SCHEDVIEW_ALGORITHM", default="scheduling.algorithm.DefaultAlgorithm")
# Seconds kube-scheduler's extender calls wait for the owner's answer.
SCHEDVIEW_EXTENDER_TIMEOUT = env.float("SCHEDVIEW_EXTENDER_TIMEOUT", default=5.0)
# host:port (IPv4 or a name) where the leading cache owner serves kube-scheduler's extender
# verbs itself (POST /extender/filter, bind, preempt: no web or Redis hop); empty: only the
# web serves them.
SCHEDVIEW_EXTENDER_ADDRESS = env.str("SCHEDVIEW_EXTENDER_ADDRESS", default="127.0.0.1:8101")
if SCHEDVIEW_EXTENDER_ADDRESS and not re.fullmatch(r"[^\s:]+:\d{1,5}",
                                                    SCHEDVIEW_EXTENDER_ADDRESS):
    raise ImproperlyConfigured("SCHEDVIEW_EXTENDER_ADDRESS must be host:port (or empty), "
                               f"not {SCHEDVIEW_EXTENDER_ADDRESS!r}")
# How many times a bind is tried before the pod is forgotten (HiveD's PodBindAttempts).
SCHEDVIEW_BIND_ATTEMPTS = env.int("SCHEDVIEW_BIND_ATTEMPTS", default=3)

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "static"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

# --- Celery beat and tasks (dashboard/tasks.py) -------------------------------------------
# Seconds a Binding POST (and the read-back after a 409) may take, and the first retry's
# delay (doubling, at most 2 s) until SCHEDVIEW_BIND_ATTEMPTS attempts in all.
SCHEDVIEW_BIND_TIMEOUT = env.float("SCHEDVIEW_BIND_TIMEOUT", default=5.0)
SCHEDVIEW_BIND_BACKOFF = env.float("SCHEDVIEW_BIND_BACKOFF", default=0.1)
# Pods per bind_pods task when actions.schedule_pods binds many at once.
SCHEDVIEW_BIND_BATCH = env.int("SCHEDVIEW_BIND_BATCH", default=50)
# The history keeps the latest SCHEDVIEW_HISTORY_KEEP transitions (0: all of them), pruned
# every SCHEDVIEW_PRUNE_PERIOD seconds (dashboard/history_retention.py).
SCHEDVIEW_HISTORY_KEEP = env.int("SCHEDVIEW_HISTORY_KEEP", default=1_000_000)
SCHEDVIEW_PRUNE_PERIOD = env.float("SCHEDVIEW_PRUNE_PERIOD", default=60.0)
if SCHEDVIEW_HISTORY_KEEP < 0 or SCHEDVIEW_PRUNE_PERIOD <= 0:
    raise ImproperlyConfigured("SCHEDVIEW_HISTORY_KEEP must be >= 0 (0: keep all) and "
                               "SCHEDVIEW_PRUNE_PERIOD > 0, not "
                               f"{SCHEDVIEW_HISTORY_KEEP} and {SCHEDVIEW_PRUNE_PERIOD}")
# A static schedule (no django-celery-beat tables). Each run expires before the next
# is due, so runs queued while workers were busy or down are dropped, never fired at once.
CELERY_BEAT_SCHEDULE = {
    "reap": {"task": "dashboard.tasks.reap", "schedule": SCHEDVIEW_REAP_PERIOD,
             "options": {"expires": SCHEDVIEW_REAP_PERIOD * 0.9}},
    "compare": {"task": "dashboard.tasks.compare", "schedule": SCHEDVIEW_COMPARE_PERIOD,
                "options": {"expires": SCHEDVIEW_COMPARE_PERIOD * 0.9}},
    "prune-history": {"task": "dashboard.tasks.prune_history", "schedule": SCHEDVIEW_PRUNE_PERIOD,
                      "options": {"expires": SCHEDVIEW_PRUNE_PERIOD * 0.9}},
}
# The embedded default schedules the simulated cluster's pending pods itself (a stand-in for
# kube-scheduler driving the extender), so every state of the machine shows. Off unless set;
# `manage.py up` sets it for its simulated cluster.
SCHEDVIEW_SCHEDULE_PERIOD = env.float("SCHEDVIEW_SCHEDULE_PERIOD", default=0.0)
if SCHEDVIEW_SCHEDULE_PERIOD > 0:
    CELERY_BEAT_SCHEDULE["schedule-pending"] = {
        "task": "dashboard.tasks.schedule_pending", "schedule": SCHEDVIEW_SCHEDULE_PERIOD,
        "options": {"expires": SCHEDVIEW_SCHEDULE_PERIOD * 0.9}}
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
