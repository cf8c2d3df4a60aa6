"""Channels and Celery both reach the Redis of this run (REDIS_URL, or the embedded one)."""
import pytest
import pytest_asyncio
from channels.layers import get_channel_layer
from channels_redis.core import RedisChannelLayer

from dashboard.celery import app as celery_app
from dashboard.runtime.redis_urls import celery_url


@pytest_asyncio.fixture
async def layer(redis_url):
    layer = get_channel_layer()
    yield layer
    await layer.close_pools()


@pytest.mark.asyncio
async def test_the_layer_is_redis_at_redis_url(layer, redis_url):
    assert isinstance(layer, RedisChannelLayer)
    assert [host["address"] for host in layer.hosts] == [redis_url]


@pytest.mark.asyncio
async def test_a_message_round_trips_through_a_channel(layer):
    channel = await layer.new_channel()
    await layer.send(channel, {"type": "cache.event", "seq": 1})
    assert await layer.receive(channel) == {"type": "cache.event", "seq": 1}


@pytest.mark.asyncio
async def test_a_group_message_reaches_every_member(layer):
    members = [await layer.new_channel() for _ in range(2)]
    for channel in members:
        await layer.group_add("schedview-test", channel)
    await layer.group_send("schedview-test", {"type": "cache.event", "seq": 2})
    for channel in members:
        assert await layer.receive(channel) == {"type": "cache.event", "seq": 2}
        await layer.group_discard("schedview-test", channel)


def test_celery_broker_and_backend_are_the_same_redis(redis_url):
    assert celery_app.conf.broker_url == celery_app.conf.result_backend == celery_url(redis_url)
    with celery_app.connection_for_write() as connection:
        connection.ensure_connection(max_retries=1)
    assert celery_app.backend.client.ping()
