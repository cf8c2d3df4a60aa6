"""The zones page's socket."""
from django.template.loader import render_to_string

from dashboard.web.live.consumers import LiveConsumer, _changes_cache
from dashboard.web.nodes import reads as node_reads


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
