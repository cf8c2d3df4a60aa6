"""The overview's socket."""
from django.template.loader import render_to_string

from dashboard.readmodel import health, read_model
from dashboard.web.live.consumers import LiveConsumer


class OverviewConsumer(LiveConsumer):
    """Keeps the overview's counts, owner status, snapshot and comparer panels live."""

    def shared_key(self):
        return "overview"

    def render(self) -> str:
        overview = read_model.overview()
        return render_to_string("dashboard/overview.html#counts", {
            "overview": overview, "health": health.gather(owner=overview.owner)})
