"""The snapshot page's socket."""
from django.template.loader import render_to_string

from dashboard.web.live.consumers import LiveConsumer
from dashboard.web.snapshot import reads as snapshot_reads


class SnapshotConsumer(LiveConsumer):
    """The snapshot page: every change moves a node's generation past the snapshot's."""

    def shared_key(self):
        return "snapshot"

    def render(self) -> str:
        return render_to_string("dashboard/snapshot.html#snapshot-live",
                                {"snapshot": snapshot_reads.snapshot_page()})
