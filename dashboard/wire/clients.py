"""One redis-py client per process and URL, and what a Redis outage raises."""
import os

import redis
from redis.backoff import ExponentialWithJitterBackoff
from redis.retry import Retry

# What an outage raises (a restarting Redis's "loading" is a ConnectionError too); any
# other RedisError is a bug, not weather.
UNREACHABLE = (redis.ConnectionError, redis.TimeoutError)

_clients: dict = {}


def redis_client(url: str) -> redis.Redis:
    """The process's client for `url` (redis:// or unix://), made at the first call.

    redis-py clients are thread-safe (a connection pool) and notice a fork themselves,
    so one per process serves its threads, and a forked worker makes its own.
    """
    key = (os.getpid(), url)
    client = _clients.get(key)
    if client is None:
        # A few quick retries for a dropped connection (Redis restarted), not redis-py's
        # default ten with pauses up to a second: a page must say "Redis is down" promptly.
        client = _clients[key] = redis.Redis.from_url(
            url, socket_connect_timeout=5,
            retry=Retry(ExponentialWithJitterBackoff(cap=0.2, base=0.02), retries=2))
    return client
