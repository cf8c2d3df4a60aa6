"""The owner's events, out to the browsers' groups on the channel layer.

One message per flush carries every event since the last one, so a burst of
a thousand transitions costs one send, not a thousand. Consumers pick what
their page shows.
"""
import asyncio
import threading

from channels.layers import DEFAULT_CHANNEL_LAYER, channel_layers

EVENTS_GROUP = "events"


class Publisher:
    """Sends from one event loop of its own, kept running in a thread: async_to_sync ran
    each send on a new loop, and channels_redis keeps its connections per loop, so every
    flush opened a Redis connection (4.8 ms a send against 0.7 ms here). The layer is an
    instance of its own too: the process's shared one would hold connections of this
    loop, which its other users' close_pools() cannot close from theirs."""

    def __init__(self, layer=None):
        self.layer = layer or channel_layers.make_backend(DEFAULT_CHANNEL_LAYER)
        self.sent = 0
        self._loop = None
        self._lock = threading.Lock()

    def publish(self, events: list, status: dict):
        if events or status:
            self._run(self.layer.group_send(
                EVENTS_GROUP, {"type": "cache.events", "events": events, "status": status}))
            self.sent += len(events)

    def _run(self, coroutine):
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                threading.Thread(target=self._loop.run_forever, name="publisher",
                                 daemon=True).start()
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()
