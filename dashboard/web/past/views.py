"""The pages as the cluster was: the overview, the nodes, a node, the zones (`?at=` on their
URLs) and the diff of two moments, reconstructed by dashboard/readmodel/moment.py; `when_at`
sends a live page's view here, and the pages of the other packages at a moment (pods,
snapshot, heat map) render past.html with `render_past`.

Why pages of their own rather than the live ones' templates: a moment of the past has
no owner, no queue, no comparer and no socket; its pages say so with a banner ("as it
was at ... - back to live") and carry `at` as a sequence number on every link, so a
person who follows them stays at the same moment. An `at` naming no moment is a 400
page saying why, a moment older than what is kept a 410.
"""
from functools import wraps

from django.core.paginator import Paginator
from django.shortcuts import render

from dashboard.readmodel import moment as moments
from dashboard.readmodel.moment_diff import diff
from dashboard.readmodel.read_model import NODES_PER_PAGE, cpu, memory

TEMPLATE = "dashboard/past.html"


def when_at(past_view):
    """Decorates a live page's view: with `?at=` in its URL, `past_view` answers instead.
    The one switch of every page that can show a moment."""
    def decorate(live_view):
        @wraps(live_view)
        def view(request, *args, **kwargs):
            chosen = past_view if "at" in request.GET else live_view
            return chosen(request, *args, **kwargs)
        return view
    return decorate


def render_past(request, page: str, context: dict, status: int = 200, fragment: str = ""):
    """The page `page` of past.html; for htmx (a filter or a pager of the page) its
    `fragment` alone. owner None: the header's live socket is not opened on the past."""
    template = f"{TEMPLATE}#{fragment}" if request.htmx and fragment else TEMPLATE
    return render(request, template, {"owner": None, "page": page, **context}, status=status)


def found_or_refused(request, at: str, partial: str):
    """(the moment, None), or (None, the 400/410 page saying why)."""
    try:
        return moments.moment(at), None
    except moments.BadMoment as exc:
        return None, render_past(request, partial, {"error": str(exc), "at": at}, status=400)
    except moments.Gone as exc:
        return None, render_past(request, partial, {"error": str(exc), "at": at}, status=410)


def _usage(node: dict) -> dict:
    return dict(node, cpu=cpu(node["requested"]["milli_cpu"], node["allocatable"]["milli_cpu"]),
                memory=memory(node["requested"]["memory"], node["allocatable"]["memory"]))


def overview(request):
    found, refused = found_or_refused(request, request.GET["at"], "overview")
    if refused:
        return refused
    totals = found.totals()
    return render_past(request, "overview", {
        "moment": found, "counts": found.counts(), "zones": found.zones(),
        "cpu": cpu(totals["cpu_requested"], totals["cpu_allocatable"]),
        "memory": memory(totals["memory_requested"], totals["memory_allocatable"])})


def nodes(request):
    found, refused = found_or_refused(request, request.GET["at"], "nodes")
    if refused:
        return refused
    page = Paginator(found.nodes(), NODES_PER_PAGE).get_page(request.GET.get("page"))
    return render_past(request, "nodes", {"moment": found,
                                          "nodes": [_usage(n) for n in page], "paged": page})


def node(request, name: str):
    found, refused = found_or_refused(request, request.GET["at"], "node")
    if refused:
        return refused
    node = found.node(name)
    if node is None:
        return render_past(request, "node", {"moment": found, "name": name,
                                             "error": f"no node {name!r} in the cache then"},
                           status=404)
    return render_past(request, "node", {"moment": found, "name": name, "node": _usage(node),
                                         "pods": found.pods(node=name)})


def zones(request):
    found, refused = found_or_refused(request, request.GET["at"], "zones")
    if refused:
        return refused
    return render_past(request, "zones", {"moment": found, "zones": found.zones(),
                                          "not_in_tree": [n["name"] for n in found.nodes()
                                                          if not n["has_node"]]})


def diff_page(request):
    """Two moments compared (`from`, `to`); without them, the form to ask."""
    asked = {key: request.GET.get(key, "").strip() for key in ("from", "to")}
    if not all(asked.values()):
        return render_past(request, "diff", {"asked": asked})
    before, refused = found_or_refused(request, asked["from"], "diff")
    if refused:
        return refused
    after, refused = found_or_refused(request, asked["to"], "diff")
    if refused:
        return refused
    if before.seq > after.seq:
        return render_past(request, "diff", {
            "asked": asked, "error": f"from (seq {before.seq}) is after to (seq {after.seq})"},
            status=400)
    return render_past(request, "diff", {"asked": asked, "diff": diff(before, after),
                                         "before": before, "after": after})
