"""One Redis URL, in the forms Channels (redis-py) and Celery (kombu) want."""
import pytest

from dashboard.runtime.redis_urls import celery_url, redis_settings, unix_url


@pytest.mark.parametrize("url, expected", [
    ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
    ("rediss://:secret@redis.internal:6380/2", "rediss://:secret@redis.internal:6380/2"),
    ("unix:///srv/schedview/var/redis.sock", "redis+socket:///srv/schedview/var/redis.sock?virtual_host=0"),
    ("unix:///run/redis.sock?db=3", "redis+socket:///run/redis.sock?virtual_host=3"),
])
def test_celery_url(url, expected):
    assert celery_url(url) == expected


def test_the_embedded_socket_as_a_url(tmp_path):
    socket = tmp_path / "redis.sock"
    assert unix_url(socket) == f"unix://{socket}"
    assert celery_url(unix_url(socket)) == f"redis+socket://{socket}?virtual_host=0"


def test_every_redis_setting_comes_from_the_one_url():
    url = "unix:///run/redis.sock?db=1"
    settings = redis_settings(url)
    assert settings["REDIS_URL"] == url
    assert settings["CHANNEL_LAYERS"]["default"] == {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {"hosts": [{"address": url, "max_connections": 1000}],
                   "group_expiry": 1800},
    }
    assert settings["CELERY_BROKER_URL"] == settings["CELERY_RESULT_BACKEND"] == celery_url(url)
