"""The owner's events, out to the browsers' groups on the channel layer.

One message per flush carries every event since the last one, so a burst of
a thousand transitions costs one send, not a thousand. Consumers pick what
their page shows.

While Redis is unreachable the events are held and go out as one message, with
the latest status, once it answers (tries spaced by RedisBackoff); past HELD_MAX
the oldest are dropped: a page that sees numbers skip fills them from the history.

A publish with a lease term goes out only while that term is current (fenced_layer.py):
refused, the events are held like an outage's, until the term is proven current again
(an emptied Redis) or the owner stops (another owner took the lease).
"""
import asyncio
import concurrent.futures
import logging
import threading

from dashboard.owner.fenced_layer import FencedChannelLayer
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

    def __init__(self, layer=None, term_key=None):
        self.layer = layer or fail_fast_layer(FencedChannelLayer)
        self.term_key = term_key      # Redis's copy of the lease term, which fences sends
        self.sent = 0
        self.refused = 0              # sends refused under a term that was not current
        self.backoff = RedisBackoff("publisher")
        self._held = []
        self._loop = None
        self._lock = threading.Lock()

    def publish(self, events: list, status: dict, term: int = None):
        """Send `events` (with what is held from earlier) and `status`, or hold them; with
        a `term`, only while it is the lease's current one."""
        self._held.extend(events)
        if not (self._held or status) or not self.backoff.ready():
            return
        message = events_message(self._held, status)
        try:
            sent = True
            if term is None:
                self._run(self.layer.group_send(EVENTS_GROUP, message))
            else:
                sent = self._run(self.layer.fenced_group_send(EVENTS_GROUP, message,
                                                              self.term_key, term))
        except (*UNREACHABLE, concurrent.futures.TimeoutError) as error:
            self.backoff.failed(error)
            del self._held[:-HELD_MAX]
            return
        self.backoff.succeeded()
        if not sent:
            self.refused += 1
            del self._held[:-HELD_MAX]
            return
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
