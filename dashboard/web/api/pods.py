"""Pods over REST: the filtered list, one pod with its history, and the actions on them.

The list runs the pods page's own query (`dashboard.web.pods.query`), so a tool and a
person see the same pods for the same filters. Actions go through
`dashboard.web.pods.actions`, the one door for state changes, which asks the cache owner
and writes the audit row; the owner's refusals keep their status (404, 409, 503).
"""
import time
from typing import Literal

from ninja import Query, Router, Schema
from ninja.errors import ValidationError
from ninja.params import Path
from pydantic import Field, ValidationError as PydanticError

from dashboard.models import PodRecord, Transition
from dashboard.web.api.auth import require_act, via
from dashboard.web.api.errors import ApiError, owner_answer
from dashboard.web.api.past import AT_DESCRIPTION, MOMENT_ERRORS, At, moment_of
from dashboard.web.api.schemas import (
    ACTION_ERRORS,
    READ_ERRORS,
    STATES,
    ActionIn,
    ActionOut,
    AssumeIn,
    AssumeOut,
    DiagnosisOut,
    ErrorOut,
    Filter,
    Name,
    PodDetailOut,
    PodPageOut,
    refuse_repeated,
)
from dashboard.clients import owner_client
from dashboard.web.pods import actions, query as pod_query
from dashboard.web.pods.past_list import past_pods, past_row
from dashboard.web.pods.history import TIMELINE_LIMIT

router = Router(tags=["pods"])


class PodQuery(Schema):
    state: Literal[("", *STATES)] | None = Field(None, description="empty: every state")
    namespace: Filter | None = None
    node: Filter | None = None
    zone: Filter | None = None
    q: Filter | None = Field(None, description="a substring of the pod's name, any case")
    sort: Literal[tuple(pod_query.SORT_CHOICES)] = Field(
        "name", description="a key, or -key for descending")
    page: int = Field(1, ge=1, le=pod_query.MAX_PAGE, description=(
        "a page number (an offset: slow deep into a large list; a number past the last "
        "page is a 400 naming the last); prefer `cursor`"))
    per_page: int = Field(pod_query.PER_PAGE, ge=1, le=pod_query.MAX_PER_PAGE)
    cursor: str | None = Field(None, max_length=pod_query.MAX_CURSOR, description=(
        "a page by cursor (keyset paging: any page, the last included, costs what the "
        "first does): `next_cursor`, `prev_cursor` or `last_cursor` of an answer with the "
        "same filters and sort; not with `page`"))
    at: At | None = Field(None, description=AT_DESCRIPTION + "; with it, the cache's pods "
                          "then (Assumed and Added: pending pods are not kept), not sortable "
                          "by `changed`; `changed_at` is the moment's time")


class PodAtQuery(Schema):
    at: At | None = Field(None, description=AT_DESCRIPTION + "; with it, the pod as the cache "
                          "held it and its history up to then (what the history does not "
                          "keep, phase, resource version and labels, is empty); 404 when the "
                          "cache did not hold it then")


@router.get("", response={200: PodPageOut, **READ_ERRORS, **MOMENT_ERRORS},
            summary="List pods, now or at a moment", operation_id="list_pods")
def list_pods(request, filters: Query[PodQuery]):
    """The read model's pods, filtered (all filters are exact but `q`), sorted and paged;
    or the cache's pods as they were `at` a kept moment, likewise."""
    refuse_repeated(request)
    try:
        parsed = pod_query.PodFilters.parse(filters.dict(exclude_none=True))
    except pod_query.BadFilter as exc:
        raise ApiError(400, str(exc)) from None
    found = moment_of(filters.at) if filters.at is not None else None
    try:
        result = (past_pods(found, parsed) if found is not None
                  else pod_query.query_pods(parsed, now=time.time()))
    except pod_query.BadFilter as exc:   # a page number past the last, a sort not kept
        raise ApiError(400, str(exc)) from None
    cursors = result.cursors
    return {"items": result.rows, "count": result.total, "count_capped": False,
            "page": result.number, "pages": result.pages, "per_page": parsed.per_page,
            "first": result.shown[0],
            # page numbers are followed only by page numbers, cursors by cursors
            "next_page": (result.number + 1
                          if result.has_next and not parsed.cursor else None),
            "next_cursor": cursors["next"], "prev_cursor": cursors["previous"],
            "last_cursor": cursors["last"]}


@router.post("/assume", response={200: AssumeOut, **ACTION_ERRORS},
             summary="Assume a pending pod on a node and queue its bind",
             operation_id="assume_pod")
def assume(request, body: AssumeIn):
    """Assume the pending pod `namespace/name` on `node` in the owner's cache, then queue
    its bind; the answer has the node's aggregates before and after. A pod the scheduling
    algorithm's filters refuse on that node is a 409 with the reason, unless `force`."""
    require_act(request)
    return owner_answer(actions.schedule_pod, body.namespace, body.name, body.node,
                        actor=request.user.get_username(), force=body.force, reason=body.reason,
                        via=via(request))


@router.get("/{uid}", response={200: PodDetailOut, **READ_ERRORS, **MOMENT_ERRORS,
                                 404: ErrorOut},
            summary="One pod with its history, now or at a moment", operation_id="get_pod")
def pod_detail(request, uid: Path[Name], query: Query[PodAtQuery]):
    """The pod's read-model record, and its transitions (the newest 500, oldest
    first); a pod that left the read model keeps its history under /events?key=<uid>.
    With `at`: the pod as the cache held it then, and its transitions up to then."""
    refuse_repeated(request)
    transitions = Transition.objects.filter(key=uid)
    if query.at is not None:
        found = moment_of(query.at)
        held = found.pod(uid)
        if held is None:
            raise ApiError(404, f"no pod {uid} in the cache at seq {found.seq} (its history, "
                                f"if any: /api/v1/events?key={uid})")
        history = _history(transitions.filter(seq__lte=found.seq))
        return {**vars(past_row(held, found)), "phase": "", "resource_version": "",
                "labels": {}, "seq": history["history"][-1].seq if history["history"] else 0,
                **history}
    record = _record(uid)
    row = pod_query.pod_row(record, time.time())
    return {**vars(row), "phase": record.phase, "resource_version": record.resource_version,
            "labels": record.labels, "seq": record.seq, **_history(transitions)}


def _history(transitions) -> dict:
    """The newest TIMELINE_LIMIT of `transitions`, oldest first, and how many there are."""
    newest = list(transitions.order_by("-seq")[:TIMELINE_LIMIT])
    return {"history": newest[::-1], "history_count": (
        len(newest) if len(newest) < TIMELINE_LIMIT else transitions.count())}


@router.get("/{uid}/diagnosis",
            response={200: DiagnosisOut, **READ_ERRORS, 404: ErrorOut, 409: ErrorOut,
                      502: ErrorOut, 503: ErrorOut},
            summary="Why a pending pod is not running", operation_id="diagnose_pod")
def diagnosis(request, uid: Path[Name]):
    """kube-scheduler's verdict on the pending pod, computed by the cache owner from its
    cache now (a dry run: nothing changes): each node's first refusing filter with the
    amounts, the FailedScheduling message kube-scheduler would write, and what preemption
    would do. 404 for a pod the owner neither holds nor tracks, 409 for one that is not
    pending, 503 when no owner answers in time."""
    return owner_answer(owner_client.diagnose, uid)


@router.get("/assume", response={200: PodDetailOut, 404: ErrorOut}, include_in_schema=False)
def pod_named_assume(request):
    """A GET of /pods/assume reads the pod with that uid (the schema's get_pod), not a 405
    from the POST route that shares its path."""
    return pod_detail(request, "assume", PodAtQuery())


# forget and expire take a body only when there is a reason: ninja cannot parse an optional
# empty one, so it is read here and documented by hand.
OPTIONAL_REASON = {"requestBody": {"required": False, "content": {"application/json": {
    "schema": ActionIn.model_json_schema()}}}}


def _reason(request) -> str:
    """The optional JSON body's reason; a JSON body that is not an ActionIn is a 400."""
    if not request.body or request.content_type != "application/json":
        return ""
    try:
        return ActionIn.model_validate_json(request.body).reason
    except PydanticError as exc:
        raise ValidationError(exc.errors(include_url=False)) from None


@router.post("/{uid}/forget", response={200: ActionOut, **ACTION_ERRORS},
             summary="Forget an assumed pod", operation_id="forget_pod",
             openapi_extra=OPTIONAL_REASON)
def forget(request, uid: Path[Name]):
    """Drop an assumed pod from the cache, as a failed bind would; 409 unless it is Assumed.
    The body (optional) gives the reason."""
    require_act(request)
    record = _record(uid)
    actor = request.user.get_username()
    reason = _reason(request) or f"forgotten by {actor} over the API"
    result = owner_answer(actions.forget_pod, uid, actor, reason, via=via(request))
    if not result.get("changed"):
        # The owner lets a pod it does not cache be forgotten quietly; a tool asked to
        # change it, so say why nothing changed.
        raise ApiError(409, f"pod {uid} is not in the cache (last seen {record.state}); "
                            f"only an Assumed pod can be forgotten")
    return result


@router.post("/{uid}/expire", response={200: ActionOut, **ACTION_ERRORS},
             summary="Expire an assumed pod now", operation_id="expire_pod",
             openapi_extra=OPTIONAL_REASON)
def expire(request, uid: Path[Name]):
    """Expire an assumed pod now, as the reaper would once its TTL passed; 409 unless Assumed.
    The body (optional) gives the reason."""
    require_act(request)
    _record(uid)
    return owner_answer(actions.expire_pod, uid, request.user.get_username(),
                        reason=_reason(request), via=via(request))


def _record(uid: str) -> PodRecord:
    record = PodRecord.objects.filter(uid=uid).first()
    if record is None:
        raise ApiError(404, f"no pod {uid} in the read model (its history, if any: "
                            f"/api/v1/events?key={uid})")
    return record
