"""One Redis URL from the environment, in the form each client wants.

Why: Channels (redis-py) and Celery (kombu) both reach the same Redis, but
they spell a Unix socket differently: redis-py takes `unix:///path?db=N`,
kombu `redis+socket:///path?virtual_host=N`. Settings and the test fixture
derive every Redis setting here, so the two can never point apart.
"""
from urllib.parse import parse_qs, urlsplit


def unix_url(socket_path) -> str:
    """The redis-py URL of a Redis listening on a Unix socket (the embedded one)."""
    return f"unix://{socket_path}"


def celery_url(url: str) -> str:
    """The broker/result-backend URL Celery needs for the same Redis."""
    parts = urlsplit(url)
    if parts.scheme != "unix":
        return url
    db = parse_qs(parts.query).get("db", ["0"])[0]
    return f"redis+socket://{parts.path}?virtual_host={db}"


def redis_settings(url: str) -> dict:
    """Every Django setting that names the Redis, derived from its one URL."""
    return {
        "REDIS_URL": url,
        "CHANNEL_LAYERS": {
            "default": {
                "BACKEND": "channels_redis.core.RedisChannelLayer",
                # A web process opens a connection per websocket joining or leaving a
                # group at once; redis-py's default cap of 100 refused the 101st viewer.
                # A web process killed without leaving its groups stays a member, and
                # every flush is sent to its dead channel, until the group's expiry:
                # hubs rejoin every 10 minutes (live_hub.py), so 30 minutes is enough.
                "CONFIG": {"hosts": [{"address": url, "max_connections": 1000}],
                           "group_expiry": 1800},
            },
        },
        "CELERY_BROKER_URL": celery_url(url),
        "CELERY_RESULT_BACKEND": celery_url(url),
    }
