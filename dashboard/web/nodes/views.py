"""The nodes pages: the table (filtered, sorted, paged), the heat map, and one node.
Bad input gets the page with what was wrong (400), an unknown node its page saying so (404)."""
from django.views.decorators.http import require_GET

from dashboard.readmodel import read_model
from dashboard.web.nodes import heatmap, query as node_query, reads as node_reads
from dashboard.web.pages import render_page
from dashboard.web.past import views as past_views


@require_GET
@past_views.when_at(past_views.nodes)
def nodes(request):
    try:
        filters = node_query.NodeFilters.parse(request.GET)
    except node_query.BadNodeFilter as exc:
        return render_page(request, "dashboard/nodes.html", "node-table",
                           {"error": str(exc), "filters": node_query.NodeFilters(),
                            **_node_choices()}, status=400)
    return render_page(request, "dashboard/nodes.html", "node-table",
                       {**node_table_context(filters), **_node_choices()})

def node_table_context(filters) -> dict:
    """What nodes.html's table body prints (the page, and its live redraws)."""
    nodes = node_reads.nodes(filters)
    return {"nodes": nodes, "filters": filters, **_node_links(filters, nodes.any_extended)}

def _node_choices() -> dict:
    """What the nodes filter form offers."""
    return {"resources": list(node_query.RESOURCES), "zones": node_reads.zone_names()}

# the table's columns: (key, header); a key is the sort its header link asks for, "" none.
# "gpu" (Extended) shows only when a node of the page has extended resources.
NODE_COLUMNS = [("name", "Node"), ("zone", "Zone"), ("", "Ready"), ("", "Taints"),
                ("cpu", "CPU"), ("memory", "Memory"), ("pods", "Pods"), ("gpu", "Extended"),
                ("assumed", "Assumed"), ("generation", "Generation")]

def _node_links(filters, extended: bool = True) -> dict:
    """The column headers (key, label, query for its sort, aria-sort) and the pager's
    prefix: the filters without the page."""
    columns = []
    for key, label in NODE_COLUMNS:
        if key == "gpu" and not extended:
            continue
        order = ("ascending" if filters.sort == key else
                 "descending" if filters.sort == f"-{key}" else "")
        flipped = f"-{key}" if order == "ascending" else key
        columns.append((key, label, filters.query(sort=flipped, page=None) if key else "",
                        order))
    base = filters.query(page=None)
    return {"columns": columns, "pager_query": f"{base}&" if base else ""}

def _heatmap_at(request):
    found, refused = past_views.found_or_refused(request, request.GET["at"], "heatmap")
    if refused:
        return refused
    metric = request.GET.get("metric") or "cpu"
    try:
        context = heatmap_context(metric, heatmap.heat_map_at(found, metric))
    except heatmap.BadMetric as exc:
        return past_views.render_past(request, "heatmap", {
            "moment": found, "error": str(exc), "metric": "cpu", "metrics": _METRICS},
            status=400)
    return past_views.render_past(request, "heatmap", {"moment": found, **context},
                                  fragment="heat-map")

@require_GET
@past_views.when_at(_heatmap_at)
def heatmap_page(request):
    try:
        context = heatmap_context(request.GET.get("metric") or "cpu")
    except heatmap.BadMetric as exc:
        return render_page(request, "dashboard/heatmap.html", "heat-map",
                           {"error": str(exc), "metric": "cpu", "metrics": _METRICS},
                           status=400)
    return render_page(request, "dashboard/heatmap.html", "heat-map", context)

_METRICS = [(metric, heatmap.NOUNS[metric]) for metric in heatmap.NOUNS]

def heatmap_context(metric: str, map_=None) -> dict:
    """What heatmap.html prints for `metric` (its map, when already read)."""
    map_ = map_ if map_ is not None else heatmap.heat_map(metric)
    return {"map": map_, "metric": metric, "metrics": _METRICS, "noun": heatmap.NOUNS[metric]}

@require_GET
@past_views.when_at(past_views.node)
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
