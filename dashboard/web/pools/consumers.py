"""The pool panel's websocket: re-renders the panel when the pools process says something
changed (the `pools` group, not the owner's), coalesced like every live page."""
from django.template.loader import render_to_string

from dashboard.web.live.consumers import LiveConsumer
from dashboard.web.pools.panel import panel
from dashboard.wire.keys import POOLS_GROUP


class PoolsConsumer(LiveConsumer):
    group = POOLS_GROUP

    def shared_key(self):
        return "pools"

    def render(self) -> str:
        return render_to_string("dashboard/pools.html#pools-panel", {"panel": panel()})
