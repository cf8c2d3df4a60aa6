"""The pages. Each renders a whole page, or for an htmx request only the
partial the page is built from, so a page and its fragment never differ.

They show the read model the cache owner writes (`dashboard.read_model`)."""
from django.http import HttpResponseBadRequest
from django.shortcuts import render

from dashboard import read_model


def _render(request, template: str, partial: str, context: dict):
    if request.htmx:
        return render(request, f"{template}#{partial}", context)
    # The header says whether a live owner is behind what the page shows.
    context.setdefault("owner", read_model.owner_status())
    return render(request, template, context)


def overview(request):
    overview = read_model.overview()
    return _render(request, "dashboard/overview.html", "counts",
                   {"overview": overview, "owner": overview.owner})


def nodes(request):
    return _render(request, "dashboard/nodes.html", "node-table",
                   {"nodes": read_model.nodes(request.GET.get("page", 1))})


def zones(request):
    return _render(request, "dashboard/zones.html", "zone-groups",
                   {"zones": read_model.zones()})


def pods(request):
    try:
        pods = read_model.pods(request.GET.get("state", ""), request.GET.get("page", 1))
    except read_model.UnknownState as exc:
        return HttpResponseBadRequest(str(exc), content_type="text/plain")
    return _render(request, "dashboard/pods.html", "pod-list", {"pods": pods})
