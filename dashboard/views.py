"""The pages. Each renders a whole page, or for an htmx request only the
partial the page is built from, so a page and its fragment never differ.

They show the read model the cache owner writes (`dashboard.read_model`,
`node_reads`, `snapshot_reads`, `event_reads`). Bad input gets the page with
what was wrong (400), an unknown node its page saying so (404)."""
from django.shortcuts import render
from django.views.decorators.http import require_GET

from django.conf import settings

from dashboard import event_reads, health_series, node_reads, read_model, snapshot_reads


def render_page(request, template: str, partial: str, context: dict, status: int = 200):
    if request.htmx:
        return render(request, f"{template}#{partial}", context, status=status)
    # The header says whether a live owner is behind what the page shows.
    context.setdefault("owner", read_model.owner_status())
    return render(request, template, context, status=status)


@require_GET
def overview(request):
    overview = read_model.overview()
    return render_page(request, "dashboard/overview.html", "counts",
                   {"overview": overview, "owner": overview.owner,
                    "ranges": list(health_series.LABELS.items()), "default_range": health_series.DEFAULT_RANGE,
                    "sample_period": settings.SCHEDVIEW_SAMPLE_PERIOD})


@require_GET
def nodes(request):
    return render_page(request, "dashboard/nodes.html", "node-table",
                   {"nodes": node_reads.nodes(request.GET.get("page", 1))})


@require_GET
def node_detail(request, name: str):
    owner = read_model.owner_status()
    try:
        node = node_reads.node_detail(name, owner)
    except node_reads.BadNodeName as exc:
        return render_page(request, "dashboard/node_detail.html", "node-live",
                       {"name": name, "error": str(exc)}, status=400)
    except node_reads.UnknownNode as exc:
        return render_page(request, "dashboard/node_detail.html", "node-live",
                       {"name": name, "error": str(exc)}, status=404)
    return render_page(request, "dashboard/node_detail.html", "node-live",
                   {"name": name, "node": node, "owner": owner})


@require_GET
def zones(request):
    owner = read_model.owner_status()
    return render_page(request, "dashboard/zones.html", "zone-groups",
                   {"tree": node_reads.zones(owner), "owner": owner})


@require_GET
def snapshot(request):
    return render_page(request, "dashboard/snapshot.html", "snapshot-live",
                   {"snapshot": snapshot_reads.snapshot_page()})


@require_GET
def events(request):
    try:
        event_filter = event_reads.EventFilter.from_query(request.GET)
    except event_reads.BadEventFilter as exc:
        return render_page(request, "dashboard/events.html", "event-list",
                       dict(_EVENT_CHOICES, error=str(exc),
                            filter=event_reads.EventFilter()), status=400)
    return render_page(request, "dashboard/events.html", "event-list",
                   dict(_EVENT_CHOICES, events=event_reads.recent_events(event_filter),
                        filter=event_filter))


_EVENT_CHOICES = {"kinds": event_reads.KINDS, "causes": event_reads.CAUSES,
                  "rows_kept": event_reads.ROWS_KEPT}

