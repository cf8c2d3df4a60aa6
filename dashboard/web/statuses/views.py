"""The statuses pages: every pod the extender has seen, by state (`/statuses/`), and one
pod's status in full (`/statuses/<namespace>/<name>/`).

A plain request gets the page, an htmx request (and the live socket,
`consumer.py`) its `status-list` / `status-detail` partial. Bad input gets the
page saying what was wrong (400); a pod not tracked, 404; no live owner, 503.
"""
from urllib.parse import urlencode

from django.views.decorators.http import require_GET

from . import status_reads
from dashboard.web.pages import render_page
from dashboard.wire.commands import CommandError
from dashboard.wire.extender import STATES

TEMPLATE = "dashboard/statuses.html"


def query_of(state: str) -> str:
    """The list's filter as a query string ('' when none), for links and the socket."""
    return urlencode({"state": state}) if state else ""


def list_context(state: str, page) -> dict:
    """Everything the list partial shows; raises BadStatusQuery or CommandError."""
    listing = status_reads.statuses_page(state, status_reads.check_page(page))
    query = query_of(state)
    return {"listing": listing, "query": query,
            "pager_query": f"{query}&" if query else "",
            "tabs": [("All", "", sum(listing.counts.values()))]
            + [(s, s, listing.counts.get(s, 0)) for s in STATES]}


@require_GET
def statuses(request):
    state = request.GET.get("state", "")
    context = {"current": "statuses", "state": state}
    try:
        context.update(list_context(status_reads.check_state(state), request.GET.get("page", "1")))
    except status_reads.BadStatusQuery as exc:
        return render_page(request, TEMPLATE, "status-list", dict(context, error=str(exc)), 400)
    except CommandError as exc:
        return render_page(request, TEMPLATE, "status-list", dict(context, error=exc.message),
                       exc.status)
    return render_page(request, TEMPLATE, "status-list", context)


def detail_context(namespace: str, name: str) -> dict:
    status = status_reads.pod_status(namespace, name)
    return {"status": status, "groups": status_reads.reason_groups(status["wait_reasons"])}


@require_GET
def status_detail(request, namespace: str, name: str):
    context = {"current": "statuses", "namespace": namespace, "name": name, "detail": True}
    try:
        context.update(detail_context(namespace, name))
    except CommandError as exc:
        return render_page(request, TEMPLATE, "status-detail", dict(context, error=exc.message),
                       exc.status)
    return render_page(request, TEMPLATE, "status-detail", context)
