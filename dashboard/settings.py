"""Settings, every one from the environment.

With nothing set this is the embedded default of `make run`: DEBUG on,
SQLite and an embedded Redis (started by `manage.py up`) under `var/`.
Production sets DEBUG=0, SECRET_KEY, ALLOWED_HOSTS, DATABASE_URL, REDIS_URL.
"""
from pathlib import Path

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
    "channels",
    "django_htmx",
    "template_partials",
    "dashboard",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "dashboard.urls"
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
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# REDIS_URL names the Redis of Channels and Celery; redis_settings() derives
# REDIS_URL, CHANNEL_LAYERS, CELERY_BROKER_URL and CELERY_RESULT_BACKEND from it.
# Without it, `manage.py up` starts an embedded Redis on EMBEDDED_REDIS_SOCKET.
_redis_url = env.str("REDIS_URL", default="")
EMBEDDED_REDIS_SOCKET = None if _redis_url else VAR_DIR / "redis.sock"
globals().update(redis_settings(_redis_url or unix_url(EMBEDDED_REDIS_SOCKET)))

# Seconds an assumed pod lives after its binding finished (0: never expires).
SCHEDVIEW_CACHE_TTL = env.float("SCHEDVIEW_CACHE_TTL", default=30.0)

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "static"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True
