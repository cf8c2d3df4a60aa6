"""How the long-running loops (the cache owner, the pools process) live through a Redis outage.

Their loops must keep turning while Redis is down (the owner keeps applying the
watch to its cache), so no call to Redis may stall them: redis-py's default client
retries a failed call ten times with pauses up to a second. Their clients retry
once, briefly, for a blip (`loop_client`), and give up within SOCKET_TIMEOUT; past
that, `RedisBackoff` tells the loop when to try Redis again, spacing its tries with
redis-py's exponential backoff, and logs the outage once when it starts and once
when it ends.
"""
import logging
import time

import redis
from channels.layers import DEFAULT_CHANNEL_LAYER
from channels_redis.core import RedisChannelLayer
from django.conf import settings
from redis.backoff import ExponentialWithJitterBackoff
from redis.retry import Retry

from dashboard.wire.clients import UNREACHABLE

log = logging.getLogger(__name__)

SOCKET_TIMEOUT = 2.0     # seconds: a stalled Redis fails a call within this
CONNECT_TIMEOUT = 1.0


def fail_fast_options() -> dict:
    """Connection options for a client whose caller must not wait out an outage: one quick
    retry (a dropped connection after a Redis restart), then the error."""
    return {"socket_connect_timeout": CONNECT_TIMEOUT, "socket_timeout": SOCKET_TIMEOUT,
            "retry": Retry(ExponentialWithJitterBackoff(cap=0.1, base=0.01), retries=1)}


def loop_client(url: str) -> redis.Redis:
    """A client for a loop that meets outages with RedisBackoff (its blocking pops must
    wait less than SOCKET_TIMEOUT)."""
    return redis.Redis.from_url(url, **fail_fast_options())


def fail_fast_layer(layer_class=RedisChannelLayer) -> RedisChannelLayer:
    """The project's channel layer (a `layer_class`), its connections failing fast
    (fail_fast_options), for a loop's sends (group_send only: the layer's receive blocks
    longer than the timeout)."""
    config = dict(settings.CHANNEL_LAYERS[DEFAULT_CHANNEL_LAYER]["CONFIG"])
    config["hosts"] = [dict(host, **fail_fast_options()) for host in config["hosts"]]
    return layer_class(**config)


class RedisBackoff:
    """When a loop should try Redis again, after failures: tries spaced by redis-py's
    exponential backoff with jitter, from `base` up to `cap` seconds.

    `cap` bounds how late a loop notices that Redis is back: the owner's lease must be
    tried again well within a lease period.
    """

    def __init__(self, what: str, *, cap: float = 1.0, base: float = 0.05,
                 clock=time.monotonic):
        self.what = what
        self.clock = clock
        self._backoff = ExponentialWithJitterBackoff(cap=cap, base=base)
        self.failures = 0
        self.down_since = None
        self._next_try = 0.0

    @property
    def down(self) -> bool:
        return self.failures > 0

    def ready(self) -> bool:
        """Whether the loop may try Redis now."""
        return self.failures == 0 or self.clock() >= self._next_try

    def failed(self, error: Exception) -> None:
        now = self.clock()
        if self.failures == 0:
            self.down_since = now
            log.warning("%s: cannot reach Redis (%s); trying again with backoff", self.what,
                        error)
        self.failures += 1
        self._next_try = now + self._backoff.compute(self.failures)

    def succeeded(self) -> None:
        if self.failures:
            log.warning("%s: Redis answers again after %.1f s", self.what,
                        self.clock() - self.down_since)
        self.failures = 0
        self.down_since = None

    def attempt(self, call, *args, **kwargs):
        """`call(*args, **kwargs)` when it is time to try Redis: (True, its result), or
        (False, None) when it is not time yet or Redis failed it (recorded)."""
        if not self.ready():
            return False, None
        try:
            result = call(*args, **kwargs)
        except UNREACHABLE as error:
            self.failed(error)
            return False, None
        self.succeeded()
        return True, result
