"""The Pending page (`/pending/`): every pending pod in kube-scheduler's queue order, its
position, age and first reason, the counts by reason, namespace and priority, filtered by
reason and namespace (query.py). A bad filter gets the page saying what was wrong (400)
and nothing listed; no live owner, 503."""
from django.utils import timezone
from django.views.decorators.http import require_GET

from dashboard.web.pages import render_page
from dashboard.web.pending.query import BadFilter, PendingFilters, pending_page
from dashboard.wire.commands import CommandError

TEMPLATE = "dashboard/pending.html"


@require_GET
def pending(request):
    try:
        filters = PendingFilters.parse(request.GET)
        listing = pending_page(filters, timezone.now())
    except BadFilter as exc:
        return render_page(request, TEMPLATE, "pending-list",
                           {"error": f"Bad filter: {exc}"}, status=400)
    except CommandError as exc:
        return render_page(request, TEMPLATE, "pending-list", {"error": exc.message},
                           status=exc.status)
    pager_query = filters.query(page=None)
    return render_page(request, TEMPLATE, "pending-list", {
        "listing": listing, "filters": filters, "groups": _groups(listing),
        "pager_query": f"{pager_query}&" if pager_query else ""})


def _groups(listing) -> list:
    """(title, filters by it, [(value, pods, query string, chosen)]) of the counts: a
    reason or namespace is a link that filters by it (the chosen one: that unfilters)."""
    filters, groups = listing.filters, []
    for title, key in (("By reason", "reason"), ("By namespace", "namespace")):
        chosen = getattr(filters, key)
        groups.append((title, True, [
            (value, pods, filters.query(**{key: "" if value == chosen else value}, page=None),
             value == chosen)
            for value, pods in listing.counts.get(key, [])]))
    groups.append(("By priority", False, [(value, pods, "", False)
                                          for value, pods in listing.counts.get("priority", [])]))
    return groups
