"""Live pages over websockets: the owner's flushes, pushed as the fragments pages render.

The owner publishes one `cache.events` message per flush (every 100 ms under churn) to
the `events` group. A page needs far fewer updates than that: a lone change is pushed at
once, and a burst is coalesced into one more push at the end of PUSH_INTERVAL, so each
consumer renders its section at most once per interval and always ends on the latest
state. It renders from the
same partial the page and its htmx refresh use, so the three never differ. htmx's ws
extension swaps the fragment in place by its id.
"""
import asyncio
import time

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.template.loader import render_to_string

from dashboard import read_model
from dashboard.feed.publisher import EVENTS_GROUP

PUSH_INTERVAL = 0.5  # seconds: a person reads no faster; bursts are coalesced


class LiveConsumer(AsyncWebsocketConsumer):
    """A live page's socket: logged-in users only; pushes `render()` after the owner's flushes.

    Subclasses say what they show (`render`, run in a thread since it reads the
    database) and which flushes concern them (`wants`, default all).
    """

    async def connect(self):
        self._last_push = 0.0
        self._scheduled = None
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)  # the page's login redirect cannot happen on a socket
            return
        await self.channel_layer.group_add(EVENTS_GROUP, self.channel_name)
        await self.accept()

    async def disconnect(self, code):
        await self.channel_layer.group_discard(EVENTS_GROUP, self.channel_name)
        if self._scheduled is not None:
            self._scheduled.cancel()

    async def receive(self, text_data=None, bytes_data=None):
        """Browsers have nothing to say on these sockets; whatever they send is ignored."""

    def wants(self, message: dict) -> bool:
        return True

    def render(self) -> str:
        raise NotImplementedError

    async def cache_events(self, message):
        if not self.wants(message):
            return
        if self._scheduled is None or self._scheduled.done():
            delay = max(0.0, self._last_push + PUSH_INTERVAL - time.monotonic())
            self._scheduled = asyncio.ensure_future(self._push_after(delay))

    async def _push_after(self, delay):
        await asyncio.sleep(delay)  # the coalescing window, not a synchronisation
        self._last_push = time.monotonic()
        await self.send(text_data=await database_sync_to_async(self.render)())


class OverviewConsumer(LiveConsumer):
    """Keeps the overview's counts, owner status, snapshot and comparer panels live."""

    def render(self) -> str:
        return render_to_string("dashboard/overview.html#counts",
                                {"overview": read_model.overview()})
