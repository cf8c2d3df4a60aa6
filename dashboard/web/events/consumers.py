"""The events page's socket: the stream after the page's cursor, without gaps."""
import threading

import orjson
from channels.db import database_sync_to_async
from django.template.loader import render_to_string

from dashboard.runtime.db_deadline import bounded_reads
from dashboard.web.events import reads as event_reads
from dashboard.web.live import hub as live_hub
from dashboard.web.live.consumers import BAD_INPUT, LiveConsumer, _query

BUFFERED = 5000      # events kept for an events page that has not said where it stands

class EventsConsumer(LiveConsumer):
    """The event stream after the page's cursor, filtered as the page is (query string).

    The browser says where its page stands, `{"after": seq}`, on every (re)connect;
    the consumer answers with what the history holds after it, then pushes the owner's
    events as they come. It follows every event's number, matching or not, so a lost
    flush shows as a gap, which it fills from the history; flushes that arrive before
    the browser spoke wait in a buffer. Every push carries the page's new cursor.
    """
    push_on_connect = False   # the browser's cursor says what it lacks

    async def connect(self):
        try:
            self.filter = event_reads.EventFilter.from_query(_query(self.scope))
        except event_reads.BadEventFilter:
            await self.close(code=BAD_INPUT)
            return
        self._lock = threading.Lock()
        self._seen = None        # the highest number accounted for; None until the browser spoke
        self._buffer = []        # events that came before that
        self._rows, self._gaps, self._notice = [], [], ""
        await super().connect()

    async def receive(self, text_data=None, bytes_data=None):
        try:
            after = orjson.loads(text_data or b"")["after"]
            if isinstance(after, bool) or not isinstance(after, int) or after < 0:
                raise ValueError
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            await self.send(text_data=render_to_string("dashboard/events.html#event-push", {
                "cursor": self._seen or 0, "rows": [],
                "notice": 'This page sent the socket something other than {"after": <seq>}.'}))
            return
        after = max(after, self._seen or 0)   # a second word: nothing is sent twice
        rows, top, more = await database_sync_to_async(bounded_reads(event_reads.events_between))(
            self.filter, after)
        with self._lock:
            self._seen = max(after, top, self._seen or 0)
            self._rows.extend(rows)
            if more:
                self._notice = f"More than {len(rows)} events came while this page was away."
            buffered, self._buffer = self._buffer, []
            self._take(buffered)
        await self.send(text_data=await live_hub.render(self))

    def wants(self, message: dict) -> bool:
        events = message.get("events") or ()
        with self._lock:
            if self._seen is None:
                self._buffer = (self._buffer + list(events))[-BUFFERED:]
                return False
            return self._take(events)

    def _take(self, events) -> bool:
        """Account for events in number order; keep the matching ones. Under the lock."""
        found = False
        for event in sorted(events, key=lambda e: e.get("seq") or 0):
            seq = event.get("seq")
            if not isinstance(seq, int) or seq <= self._seen:
                continue
            if seq > self._seen + 1:
                self._gaps.append((self._seen, seq))
                found = True
            self._seen = seq
            if self.filter.matches(event):
                self._rows.append(event_reads.row_of(event))
                found = True
        return found

    def render(self) -> str:
        with self._lock:
            rows, gaps, notice, cursor = self._rows, self._gaps, self._notice, self._seen
            self._rows, self._gaps, self._notice = [], [], ""
        for after, before in gaps:
            missed, _, more = event_reads.events_between(self.filter, after, before)
            rows.extend(missed)
            if more:
                notice = f"More than {len(missed)} events were lost on the way here."
        rows = sorted(rows, key=lambda row: row.seq, reverse=True)[:event_reads.ROWS_KEPT]
        return render_to_string("dashboard/events.html#event-push",
                                {"rows": rows, "cursor": cursor, "notice": notice})
