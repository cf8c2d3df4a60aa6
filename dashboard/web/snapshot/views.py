"""The snapshot page: the snapshot's generation and the nodes that moved past it, now or at
a moment of the past (`?at=`)."""
from django.views.decorators.http import require_GET

from dashboard.web.pages import render_page
from dashboard.web.past.views import found_or_refused, render_past, when_at
from dashboard.web.snapshot import reads as snapshot_reads


def _snapshot_at(request):
    found, refused = found_or_refused(request, request.GET["at"], "snapshot")
    if refused:
        return refused
    return render_past(request, "snapshot", {
        "moment": found, "snapshot": snapshot_reads.snapshot_page(moment=found)})


@require_GET
@when_at(_snapshot_at)
def snapshot(request):
    return render_page(request, "dashboard/snapshot.html", "snapshot-live",
                   {"snapshot": snapshot_reads.snapshot_page()})
