"""The pods pages: the filtered list, one pod's diagram and timeline, and the actions on it.

Why apart from views.py: these pages have their own query (`pod_query`), history
(`pod_history`) and actions with a confirmation step, and the REST API and the live
consumers reuse the same pieces. Bad input gets a page that says what was wrong (400,
404, 403, or the owner's refusal with its status) and changes nothing.
"""
import time

from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from dashboard.readmodel import read_model
from dashboard.models import ACT_PERMISSION, NodeRecord, PodState
from dashboard.web.pages import render_page
from dashboard.web.past.views import when_at
from dashboard.web.pods import actions, past
from dashboard.web.pods.action_preview import preview
from dashboard.web.pods.diagnosis import pod_diagnosis
from dashboard.web.pods.history import pod_history
from dashboard.web.pods.listing import column_links, form_context, state_tabs
from dashboard.web.pods.query import BadFilter, PodFilters, namespaces, pod_row, query_pods
from dashboard.web.pods.spec import pod_spec
from dashboard.wire.commands import CommandError

# action in the URL -> (what runs it: run(history, actor, node, reason), its button's words, what
# it does in a sentence, the state a pod must be in). A page offers an action only to a pod
# in its state: Forget and Expire on an Added pod ended in the owner's 409.
ACTIONS = {
    "forget": (lambda history, actor, node, reason: actions.forget_pod(
                   history.uid, actor, reason, via=VIA), "Forget",
               "The pod leaves the cache at once and its node no longer counts it, as when "
               "its bind fails. The pod itself is untouched: it is pending again.",
               PodState.ASSUMED),
    "expire": (lambda history, actor, node, reason: actions.expire_pod(
                   history.uid, actor, reason=reason, via=VIA),
               "Expire now",
               "The pod expires as the reaper would once its time is up: it leaves the cache "
               "and its node no longer counts it, until the watch sees it bound.",
               PodState.ASSUMED),
    "assume": (lambda history, actor, node, reason: actions.schedule_pod(
                   history.namespace, history.name, node, actor, reason=reason, via=VIA),
               "Assume",
               "The pod is assumed on the node in the cache, as the scheduler's filter does, "
               "and its bind is queued: the node counts it from now on. The scheduling "
               "algorithm's filters must let it fit there (the owner says why not, if not).",
               PodState.PENDING),
}
VIA = "page"          # the door the audit names for actions asked on these pages
NODE_CHOICES = 500     # node names a pending pod's page offers to assume it on


def _form_context(filters: PodFilters) -> dict:
    return form_context(filters, namespaces())


def pod_list_context(filters: PodFilters, now: float | None = None, *,
                     form: bool = True) -> dict:
    """What pods.html's partials print: the rows with their state tabs (the live pushes
    re-render these, so the tabs' counts move with the rows), and the form unless `form`
    is False."""
    listing = query_pods(filters, now)
    context = {"pods": listing, "filters": filters, "now": listing.now,
               "state_tabs": state_tabs(listing), **column_links(filters)}
    if form:
        context.update(_form_context(filters))
    return context


@require_GET
@when_at(past.pods)
def pods(request):
    try:
        filters = PodFilters.parse(request.GET)
        context = pod_list_context(filters)
    except BadFilter as exc:
        return render_page(request, "dashboard/pods.html", "pod-list",
                           {"error": str(exc), **_form_context(PodFilters()),
                            "now": time.time()}, status=400)
    return render_page(request, "dashboard/pods.html", "pod-list", context)


def pod_detail_context(uid: str, now: float | None = None) -> dict | None:
    """What pod_detail.html's live section prints; None for a pod nobody ever saw."""
    history = pod_history(uid)
    if history is None:
        return None
    now = time.time() if now is None else now
    row = pod_row(history.record, now) if history.record is not None else None
    return {"history": history, "row": row, "now": now}


def _missing(request, uid: str, bad_action: str = ""):
    return render_page(request, "dashboard/pod_detail.html", "pod-live",
                   {"missing": uid, "bad_action": bad_action}, status=404)


@require_GET
@when_at(past.pod)
def pod_detail(request, uid: str):
    return _detail_page(request, uid)


def _detail_page(request, uid: str, *, error: str = "", status: int = 200):
    """The pod's page, with an action's refusal (`error`) at its top when there is one."""
    context = pod_detail_context(uid)
    if context is None:
        return _missing(request, uid)
    done = request.GET.get("done")
    owner = read_model.owner_status()
    spec, spec_note = pod_spec(uid, owner.live)
    can_act = request.user.has_perm(ACT_PERMISSION)
    state = context["history"].state
    context.update(_diagnosis_context(uid, state, owner))
    context.update(error=error, done=ACTIONS[done][1] if done in ACTIONS else "",
                   owner=owner, spec=spec, spec_note=spec_note, can_act=can_act,
                   actions=[(name, words, needs) for name, (_, words, _, needs)
                            in ACTIONS.items() if needs == state],
                   node_names=_node_names() if can_act and state == PodState.PENDING else [])
    return render_page(request, "dashboard/pod_detail.html", "pod-live", context, status=status)


def _diagnosis_context(uid: str, state: str, owner) -> dict:
    """Why a pending pod is not running (nothing for a pod in another state)."""
    if state != PodState.PENDING:
        return {}
    diagnosis, note = pod_diagnosis(uid, owner.live)
    return {"diagnosis": diagnosis, "diagnosis_note": note}


@require_GET
def pod_diagnosis_section(request, uid: str):
    """The diagnosis section alone: the pod's page asks for it again every few seconds, as
    nodes and pods change while the pod waits; empty once the pod is no longer pending
    (the page then drops the section)."""
    history = pod_history(uid)
    if history is None:
        return _missing(request, uid)
    context = {"history": history,
               **_diagnosis_context(uid, history.state, read_model.owner_status())}
    return render(request, "dashboard/pod_detail.html#pod-diagnosis", context)


def _node_names() -> list[str]:
    return list(NodeRecord.objects.filter(has_node=True).order_by("name")
                .values_list("name", flat=True)[:NODE_CHOICES])


@require_http_methods(["GET", "POST"])
def pod_action(request, uid: str, action: str):
    """GET, or the pod page's button (a POST without `confirm`): what the action will change,
    and the confirm button. A POST with confirm=yes: do it, then back to the pod's page."""
    if action not in ACTIONS:
        return _missing(request, uid, bad_action=action)
    if not request.user.has_perm(ACT_PERMISSION):
        # Answered, not raised: a refusal a viewer meets is expected, and Django logs a
        # raised PermissionDenied with its whole traceback.
        return render(request, "403.html", {"exception": f"{action} needs the act_on_pods "
                                            "permission (the operator role)"}, status=403)
    history = pod_history(uid)
    if history is None:
        return _missing(request, uid)
    run, words, explanation, needs = ACTIONS[action]
    posted = request.POST.get("action")
    if request.method == "POST" and posted not in (None, action):
        return _detail_page(request, uid, status=400,
                            error=f"the form asked for {posted!r} on the {action!r} page; "
                                  "nothing was done")
    node = ""
    if action == "assume":
        node = (request.POST.get("node") or request.GET.get("node") or "").strip()
        if not NodeRecord.objects.filter(name=node[:253]).exists():
            return _detail_page(request, uid, status=400,
                                error=f"Assume: no node named {node[:80]!r} in the cache; "
                                      "nothing was done")
    if request.method == "POST" and request.POST.get("confirm") == "yes":
        try:
            run(history, request.user.get_username(), node,
                request.POST.get("reason", "").strip())
        except CommandError as exc:
            return _detail_page(request, uid, status=exc.status,
                                error=f"{words} refused: {exc.message}. Nothing was changed.")
        return redirect(f"{reverse('pod-detail', args=[uid])}?done={action}")
    record = history.record
    return render_page(request, "dashboard/pod_action.html", "confirmation", {
        "history": history, "action": action, "words": words, "explanation": explanation,
        "preview": (preview(record, node) if record is not None else None),
        "needs": needs, "in_state": history.state == needs, "node": node})
