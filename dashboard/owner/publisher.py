"""The owner's events, out to the browsers' groups on the channel layer.

One message per flush carries every event since the last one, so a burst of
a thousand transitions costs one send, not a thousand. Consumers pick what
their page shows.

While Redis is unreachable the events are held and go out as one message, with
the latest status, once it answers (tries spaced by RedisBackoff); past HELD_MAX
the oldest are dropped: a page that sees numbers skip fills them from the history.
"""
import asyncio
import concurrent.futures
import logging
import threading

from dashboard.runtime.redis_outage import (
    SOCKET_TIMEOUT,
    UNREACHABLE,
    RedisBackoff,
    fail_fast_layer,
)
from dashboard.wire.keys import EVENTS_GROUP
from dashboard.wire.live import events_message

log = logging.getLogger(__name__)

HELD_MAX = 50_000        # events held for the browsers while Redis is unreachable
SEND_TIMEOUT = 3 * SOCKET_TIMEOUT


class Publisher:
    """Sends from one event loop of its own, kept running in a thread: channels_redis
    keeps its connections per loop, and async_to_sync would run each send on a new loop,
    opening a Redis connection every flush. The layer is an
    instance of its own too: the process's shared one would hold connections of this
    loop, which its other users' close_pools() cannot close from theirs."""

    def __init__(self, layer=None):
        self.layer = layer or fail_fast_layer()
        self.sent = 0
        self.backoff = RedisBackoff("publisher")
        self._held = []
        self._loop = None
        self._lock = threading.Lock()

    def publish(self, events: list, status: dict):
        """Send `events` (with what is held from earlier) and `status`, or hold them."""
        self._held.extend(events)
        if not (self._held or status) or not self.backoff.ready():
            return
        try:
            self._run(self.layer.group_send(EVENTS_GROUP, events_message(self._held, status)))
        except (*UNREACHABLE, concurrent.futures.TimeoutError) as error:
            self.backoff.failed(error)
            del self._held[:-HELD_MAX]
            return
        self.backoff.succeeded()
        self.sent += len(self._held)
        self._held = []

    def _run(self, coroutine):
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                threading.Thread(target=self._loop.run_forever, name="publisher",
                                 daemon=True).start()
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        try:
            return future.result(SEND_TIMEOUT)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise

    def close(self):
        """Stop the sending loop's thread (the owner is done)."""
        with self._lock:
            if self._loop is not None:
                self._loop.call_soon_threadsafe(self._loop.stop)
                self._loop = None
