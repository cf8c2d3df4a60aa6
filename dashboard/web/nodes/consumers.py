"""The nodes pages' sockets: the table, the heat map, one node."""
import threading

from channels.db import database_sync_to_async
from django.template.loader import render_to_string

from dashboard.runtime.db_deadline import bounded_reads
from dashboard.web.live.consumers import BAD_INPUT, LiveConsumer, _nodes_touched, _query
from dashboard.web.nodes import heatmap, query as node_query, reads as node_reads, views


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
        self._extended = True
        # The rows shown are redrawn in place; which rows a page holds is redrawn only when
        # nodes come or go (a sort by use would otherwise reshuffle under the reader).
        self._shown = set(await database_sync_to_async(bounded_reads(node_reads.page_names))(self.filters))
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
                self._extended = context["nodes"].any_extended   # the table's columns
            return render_to_string("dashboard/nodes.html#node-table-body", context)
        return "".join(render_to_string("dashboard/nodes.html#node-row",
                                        {"row": row, "nodes": {"any_extended": self._extended}})
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
