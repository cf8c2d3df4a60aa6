"""The pages. Each renders a whole page, or for an htmx request only the
partial the page is built from, so a page and its fragment never differ."""
from django.shortcuts import render

from dashboard import cache_view
from dashboard.example_cluster import example


def _render(request, template: str, partial: str, context: dict):
    name = f"{template}#{partial}" if request.htmx else template
    return render(request, name, context)


def overview(request):
    cache, snapshot = example()
    return _render(request, "dashboard/overview.html", "counts",
                   {"overview": cache_view.overview(cache, snapshot)})


def nodes(request):
    return _render(request, "dashboard/nodes.html", "node-table",
                   {"nodes": cache_view.nodes(example().cache)})


def zones(request):
    return _render(request, "dashboard/zones.html", "zone-groups",
                   {"zones": cache_view.zones(example().cache)})
