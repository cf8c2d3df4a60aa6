"""The cluster as it was: `at` on the REST reads, the overview's counts at a moment, and
the diff of two moments (dashboard/readmodel/moment.py reconstructs them).

Every read that takes `at` answers 400 when `at` names no moment and 410 when the moment
is older than what the history keeps, in the API's one error shape."""
from datetime import datetime
from typing import Annotated

from ninja import Query, Router, Schema
from pydantic import Field, StringConstraints

from dashboard.readmodel import moment as moments
from dashboard.readmodel.moment_diff import DIFF_LIMIT, MAX_DIFF_LIMIT, diff
from dashboard.readmodel.read_model import node_totals, pod_counts, recent_outcomes
from dashboard.web.api.errors import ApiError
from dashboard.web.api.schemas import ErrorOut, ValidationErrorOut, example, refuse_repeated

router = Router(tags=["time travel"])

At = Annotated[str, StringConstraints(min_length=1, max_length=64)]
MOMENT_TEXT = ("a sequence number (e.g. 1234567) or an ISO 8601 time "
               "(e.g. 2026-11-26T04:30:00Z; without an offset, UTC)")
AT_DESCRIPTION = f"a moment of the past: {MOMENT_TEXT}; absent: now"


class GoneOut(ErrorOut):
    """410: the moment is older than what the history keeps."""
    model_config = example({"error": "sequence number 1 is before the oldest moment kept "
                                     "(seq 1180231, 2026-11-26T04:12:00+00:00)"})


MOMENT_ERRORS = {400: ValidationErrorOut, 401: ErrorOut, 410: GoneOut}


def moment_of(at: str) -> moments.Moment:
    """The reconstructed moment, or the API's 400 (names no moment) or 410 (not kept)."""
    try:
        return moments.moment(at)
    except moments.BadMoment as exc:
        raise ApiError(400, str(exc)) from None
    except moments.Gone as exc:
        raise ApiError(410, str(exc)) from None


class MomentOut(Schema):
    seq: int = Field(description="the sequence number the state is at")
    at: datetime = Field(description="the time asked for, or that of the transition at seq")


class CountsQuery(Schema):
    at: At | None = Field(None, description=AT_DESCRIPTION)


class CountsOut(Schema):
    moment: MomentOut | None = Field(description="the moment shown; null: now")
    assumed: int
    binding_finished: int = Field(description="of the assumed pods, those whose bind returned")
    added: int
    pending: int | None = Field(description="pods waiting for a node; null for the past "
                                            "(the history keeps the cache, not the queue)")
    expired_recently: int = Field(description="pods expired in the `recent_minutes` up to it")
    forgotten_recently: int
    recent_minutes: int
    nodes: int = Field(description="NodeInfos, deleted nodes with pods left included")
    missing_nodes: int = Field(description="NodeInfos whose node was deleted with pods left")
    cpu_requested: int = Field(description="millicores, summed over the nodes")
    cpu_allocatable: int
    memory_requested: int = Field(description="bytes")
    memory_allocatable: int
    model_config = example({"moment": {"seq": 1234567, "at": "2026-11-26T04:30:00Z"},
                            "assumed": 3, "binding_finished": 1, "added": 149012,
                            "pending": None, "expired_recently": 0, "forgotten_recently": 41,
                            "recent_minutes": 5, "nodes": 5000, "missing_nodes": 0,
                            "cpu_requested": 96_000_000, "cpu_allocatable": 160_000_000,
                            "memory_requested": 2**45, "memory_allocatable": 2**46})


@router.get("/counts", response={200: CountsOut, **MOMENT_ERRORS},
            summary="The overview's counts, now or at a moment", operation_id="get_counts")
def counts(request, query: Query[CountsQuery]):
    """Pods by state, nodes and the cluster's requested and allocatable CPU and memory: the
    overview's figures, from the read model, or as they were `at` a kept moment."""
    refuse_repeated(request)
    if query.at is not None:
        found = moment_of(query.at)
        return {"moment": {"seq": found.seq, "at": found.at}, "pending": None,
                **found.counts(), **found.totals()}
    pods, recent = pod_counts(), recent_outcomes()
    nodes = node_totals()
    nodes["missing_nodes"] = nodes.pop("missing")
    return {"moment": None, "assumed": pods.assumed, "binding_finished": pods.binding_finished,
            "added": pods.added, "pending": pods.pending, "expired_recently": recent.expired,
            "forgotten_recently": recent.forgotten, "recent_minutes": recent.minutes, **nodes}


class DiffQuery(Schema):
    from_: At = Field(alias="from", description=f"the earlier moment: {MOMENT_TEXT}")
    to: At = Field(description="the later moment, likewise")
    limit: int = Field(DIFF_LIMIT, ge=0, le=MAX_DIFF_LIMIT,
                       description="items of each list at most (counts are whole)")


class DiffPodOut(Schema):
    uid: str
    namespace: str
    name: str
    node: str = Field(description="at the later moment (at the earlier, for pods that left)")
    state: str
    from_node: str | None = None
    from_state: str | None = None


class DiffPodsOut(Schema):
    count: int
    items: list[DiffPodOut]


class NodeUseOut(Schema):
    pods: int
    milli_cpu: int
    memory: int
    allocatable_milli_cpu: int
    allocatable_memory: int


class NodeChangeOut(Schema):
    name: str
    before: NodeUseOut | None = Field(description="null: no such node then")
    after: NodeUseOut | None


class NodeChangesOut(Schema):
    count: int
    items: list[NodeChangeOut]


class DiffOut(Schema):
    from_: MomentOut = Field(alias="from")
    to: MomentOut
    appeared: DiffPodsOut
    left: DiffPodsOut
    moved: DiffPodsOut
    changed_state: DiffPodsOut
    nodes: NodeChangesOut = Field(description="the nodes whose use changed")


@router.get("/diff", response={200: DiffOut, **MOMENT_ERRORS}, by_alias=True,
            summary="What changed between two moments", operation_id="get_diff")
def get_diff(request, query: Query[DiffQuery]):
    """The cached pods that appeared, left, moved or changed state from one kept moment to
    another, and each node's use before and after."""
    refuse_repeated(request)
    before, after = moment_of(query.from_), moment_of(query.to)
    if before.seq > after.seq:
        raise ApiError(400, f"from (seq {before.seq}) is after to (seq {after.seq})")
    return diff(before, after, query.limit)
