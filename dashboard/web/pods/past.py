"""The pods list and a pod's page at a moment of the past (`?at=`, by way of
past.views.when_at): under past.html's banner, without a socket.

Why here and not in dashboard/web/past/: they print the live list's form, tabs and
cursors and the live page's diagram and timeline, so they belong with the pods pages,
and the past package stays below every package that shows a moment.
"""
from dataclasses import replace

from dashboard.web.past.views import found_or_refused, render_past
from dashboard.web.pods.history import pod_history
from dashboard.web.pods.listing import column_links, form_context, state_tabs
from dashboard.web.pods.past_list import NOT_KEPT_SORTS, past_pods, past_row
from dashboard.web.pods.query import BadFilter, PodFilters


def pods(request):
    """The live list's filters, sorts and cursors over the moment's cached pods."""
    found, refused = found_or_refused(request, request.GET["at"], "pods")
    if refused:
        return refused
    context = {"moment": found}
    try:
        # `at` as the moment's sequence number: every link of the list stays at it
        filters = replace(PodFilters.parse(request.GET), at=str(found.seq))
        listing = past_pods(found, filters)
    except BadFilter as exc:
        filters = PodFilters(at=str(found.seq))
        context.update(error=str(exc), bad_filter=True)
        status = 400
    else:
        context.update(pods=listing, state_tabs=state_tabs(listing),
                       **column_links(filters, NOT_KEPT_SORTS))
        status = 200
    context.update(form_context(filters, found.namespaces(), NOT_KEPT_SORTS))
    return render_past(request, "pods", context, status, fragment="pod-list")


def pod(request, uid: str):
    """The pod as the cache held it then, and its timeline up to then; a 404 page when the
    cache did not hold it then."""
    found, refused = found_or_refused(request, request.GET["at"], "pod")
    if refused:
        return refused
    held = found.pod(uid)
    history = pod_history(uid, until=found.seq)
    if held is None:
        then = f" (its last transition before then: {history.state})" if history else ""
        return render_past(request, "pod", {
            "moment": found, "history": history, "uid": uid,
            "error": f"pod {uid} was not in the cache then{then}"}, status=404)
    return render_past(request, "pod", {"moment": found, "history": history, "uid": uid,
                                        "row": past_row(held, found)})
