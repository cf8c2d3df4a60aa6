"""The snapshot page: the snapshot's generation and the nodes that moved past it."""
from django.views.decorators.http import require_GET

from dashboard.web.pages import render_page
from dashboard.web.snapshot import reads as snapshot_reads


@require_GET
def snapshot(request):
    return render_page(request, "dashboard/snapshot.html", "snapshot-live",
                   {"snapshot": snapshot_reads.snapshot_page()})
