"""Live pages over websockets: the owner's flushes, pushed as the fragments pages render.

The owner publishes one `cache.events` message per flush (every 100 ms under churn) to
the `events` group. The process's hub (`live_hub`) receives it once and offers it to
each fragment, which pushes at most once per PUSH_INTERVAL. Consumers render from the
same partial the page and its htmx refresh use, so the three never differ. htmx's ws
extension swaps the fragment in place by its id.
"""
import threading
from urllib.parse import parse_qs

import orjson
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.template.loader import render_to_string

from dashboard.readmodel import health, read_model
from dashboard.web import pages as views
from dashboard.web.events import reads as event_reads
from dashboard.web.live import hub as live_hub
from dashboard.web.nodes import heatmap, query as node_query, reads as node_reads
from dashboard.web.snapshot import reads as snapshot_reads
from dashboard.wire.keys import EVENTS_GROUP

BAD_INPUT = 4400     # close code: the socket's URL asked for something that cannot be shown
NOT_FOUND = 4404     # close code: no live page has a socket at that path
BUFFERED = 5000      # events kept for an events page that has not said where it stands


class LiveConsumer(AsyncWebsocketConsumer):
    """A live page's socket: logged-in users only; pushes `render()` after the owner's flushes.

    Subclasses say what they show (`render`, run in a thread since it reads the
    database), which flushes concern them (`wants`, default all), and whether
    other sockets show the same (`shared_key`: then one render serves them all).
    The owner publishes a flush once its rows are written, so a render after it
    shows it. One push follows the connect: a change between the page's render
    and the socket joining would otherwise be missed until the next one.
    """
    _fragment = None    # also for a socket a subclass refused before connecting
    push_on_connect = True
    group = EVENTS_GROUP   # where the changes it shows are announced
    # No channel of its own: the hub receives for every socket of the process. (With one,
    # each socket kept a receive pending on the layer, and channels_redis hands a message
    # between them under one lock: 200 such sockets stalled the process's connects and
    # closes for seconds.) An alias no layer is configured under gives none.
    channel_layer_alias = None

    async def connect(self):
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)  # the page's login redirect cannot happen on a socket
            return
        self._fragment = await live_hub.hub(self.group).join(self)
        await self.accept()
        if self.push_on_connect:   # to this socket alone: the others are up to date
            await self.send(text_data=await self._fragment.current(self))

    async def disconnect(self, code):
        if self._fragment is not None:
            await live_hub.hub(self.group).leave(self, self._fragment)
            self._fragment = None

    async def receive(self, text_data=None, bytes_data=None):
        """Browsers have nothing to say on these sockets; whatever they send is ignored."""

    def shared_key(self):
        """What this socket shows, when another socket with the same key shows the same
        (its `wants` and `render` then hold no state of the socket's own); None: its own."""
        return None

    def wants(self, message: dict) -> bool:
        return True

    def render(self) -> str:
        raise NotImplementedError


class NoSuchSocket(AsyncWebsocketConsumer):
    """Any path no live page serves: closed (4401 to an anonymous caller, as everywhere, else
    4404), where Channels' router would fail the connection with an exception."""

    async def connect(self):
        user = self.scope.get("user")
        await self.close(code=NOT_FOUND if user is not None and user.is_authenticated
                         else 4401)


class OverviewConsumer(LiveConsumer):
    """Keeps the overview's counts, owner status, snapshot and comparer panels live."""

    def shared_key(self):
        return "overview"

    def render(self) -> str:
        overview = read_model.overview()
        return render_to_string("dashboard/overview.html#counts", {
            "overview": overview, "health": health.gather(owner=overview.owner)})


class HeaderConsumer(LiveConsumer):
    """The header's owner badge on every page: its sequence number moves with each flush.
    One render serves every page open in the process (they all show the same)."""

    def shared_key(self):
        return "header"

    def render(self) -> str:
        return render_to_string("dashboard/components.html#owner-source",
                                {"owner": read_model.owner_status()})


def _query(scope) -> dict:
    """The socket URL's query string, one value a name (the last)."""
    return {key: values[-1]
            for key, values in parse_qs(scope.get("query_string", b"").decode("latin-1")).items()}


def _nodes_touched(message: dict) -> set:
    """Node names a flush changed: a node event's own, a pod event's node."""
    return {event.get("key") if str(event.get("kind", "")).startswith("node_")
            else event.get("node") for event in message.get("events") or ()} - {None, ""}


def _changes_cache(message: dict) -> bool:
    return any(event.get("kind") != "snapshot_updated" for event in message.get("events") or ())


class NodesConsumer(LiveConsumer):
    """The nodes table: the rows of the changed nodes of the browser's page; the whole body
    when nodes came or went (the count, the order and the pager change)."""

    async def connect(self):
        try:
            self.filters = node_query.NodeFilters.parse(_query(self.scope))
        except node_query.BadNodeFilter:
            await self.close(code=BAD_INPUT)
            return
        self._lock = threading.Lock()
        self._changed, self._whole = set(), True   # the push on connect redraws the body
        # The rows shown are redrawn in place; which rows a page holds is redrawn only when
        # nodes come or go (a sort by use would otherwise reshuffle under the reader).
        self._shown = set(await database_sync_to_async(node_reads.page_names)(self.filters))
        await super().connect()

    def wants(self, message: dict) -> bool:
        whole = any(event.get("kind") in ("node_added", "node_removed")
                    for event in message.get("events") or ())
        with self._lock:
            touched = _nodes_touched(message) & self._shown
            self._changed |= touched
            self._whole = self._whole or whole
            return bool(touched) or whole

    def render(self) -> str:
        with self._lock:
            changed, whole = self._changed, self._whole
            self._changed, self._whole = set(), False
        if whole:
            context = views.node_table_context(self.filters)
            with self._lock:
                self._shown = {row.name for row in context["nodes"].rows}
            return render_to_string("dashboard/nodes.html#node-table-body", context)
        return "".join(render_to_string("dashboard/nodes.html#node-row", {"row": row})
                       for row in node_reads.node_rows(changed))


class HeatMapConsumer(LiveConsumer):
    """The heat map: after flushes that touch nodes, the cells whose level or figure moved
    since this fragment's last push (and the legend); the whole body when nodes came or
    went. Viewers of one metric share the render: the map is read whole (three columns of
    every node, one query) and compared with the last one sent, so a socket taking over
    the fragment only ever sends more cells than needed, never fewer."""

    async def connect(self):
        try:
            self.metric = heatmap.check_metric(_query(self.scope).get("metric") or "cpu")
        except heatmap.BadMetric:
            await self.close(code=BAD_INPUT)
            return
        self._sent = None   # the map as last pushed (None: push the whole body)
        await super().connect()

    def shared_key(self):
        return ("heatmap", self.metric)

    def wants(self, message: dict) -> bool:
        return bool(_nodes_touched(message))

    def render(self) -> str:
        current = heatmap.heat_map(self.metric)
        changed, self._sent = heatmap.changes(self._sent, current), current
        context = views.heatmap_context(self.metric, current)
        if changed is None:
            return render_to_string("dashboard/heatmap.html#heat-body", context)
        return render_to_string("dashboard/heatmap.html#heat-changes",
                                dict(context, cells_html=heatmap.cells_html(changed)))


class NodeDetailConsumer(LiveConsumer):
    """One node's page: re-rendered after flushes with an event on that node. Its image
    names are asked of the owner again only after an event of the node itself (pods
    coming and going do not change them), so viewers do not keep the owner busy."""

    async def connect(self):
        self.name = self.scope["url_route"]["kwargs"]["name"]
        try:
            node_reads.check_name(self.name)
        except node_reads.BadNodeName:
            await self.close(code=BAD_INPUT)
            return
        self._node_changes = 0     # events of the node itself seen so far
        self._images = (-1, None)  # (node changes when asked, (images, note))
        await super().connect()

    def wants(self, message: dict) -> bool:
        self._node_changes += sum(
            1 for event in message.get("events") or ()
            if str(event.get("kind", "")).startswith("node_") and event.get("key") == self.name)
        return self.name in _nodes_touched(message)

    def render(self) -> str:
        changes, (asked_at, images) = self._node_changes, self._images
        try:
            node = node_reads.node_detail(self.name,
                                          images=images if asked_at == changes else None)
        except (node_reads.BadNodeName, node_reads.UnknownNode) as exc:
            return render_to_string("dashboard/node_detail.html#node-live",
                                    {"error": str(exc)})
        if node.images is not None:
            self._images = (changes, (node.images, node.images_note))
        return render_to_string("dashboard/node_detail.html#node-live", {"node": node})


class ZonesConsumer(LiveConsumer):
    """The zone tree: its nodes, their zones' usage, and the round robin's position."""

    def shared_key(self):
        return "zones"

    async def connect(self):
        self._position = None
        await super().connect()

    def wants(self, message: dict) -> bool:
        position = (message.get("status") or {}).get("round_robin")
        moved, self._position = position != self._position, position
        return moved or _changes_cache(message)

    def render(self) -> str:
        return render_to_string("dashboard/zones.html#zone-groups",
                                {"tree": node_reads.zones()})


class SnapshotConsumer(LiveConsumer):
    """The snapshot page: every change moves a node's generation past the snapshot's."""

    def shared_key(self):
        return "snapshot"

    def render(self) -> str:
        return render_to_string("dashboard/snapshot.html#snapshot-live",
                                {"snapshot": snapshot_reads.snapshot_page()})


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
        rows, top, more = await database_sync_to_async(event_reads.events_between)(
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
