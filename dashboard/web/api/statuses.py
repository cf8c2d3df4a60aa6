"""Pod schedule statuses over REST: what the scheduler extender decided for each pod.

The statuses live in the cache owner (the extender decides there): a page of them,
filtered by state, or one pod by namespace and name with every node's wait reason.
503 without a live owner.
"""
from typing import Literal

from ninja import Query, Router, Schema
from ninja.params import Path
from pydantic import Field

from dashboard.readmodel.read_model import MAX_PAGE
from dashboard.web.api.errors import ApiError
from dashboard.web.api.schemas import (
    READ_ERRORS,
    ErrorOut,
    Name,
    PageInfo,
    VictimOut,
    example,
    refuse_repeated,
)
from dashboard.web.statuses import status_reads
from dashboard.wire.commands import CommandError
from dashboard.wire.extender import STATES

router = Router(tags=["statuses"])

STATUS_ERRORS = {**READ_ERRORS, 503: ErrorOut}


class StatusOut(Schema):
    uid: str
    namespace: str
    name: str
    state: Literal[STATES] = Field(description="Waiting, Preempting, Binding or Bound")
    node: str = Field(description="Binding/Bound: the node placed on; Preempting: where the "
                                  "victims make room; empty while Waiting")
    bind_attempts: int = Field(description="filter calls seen again while Binding "
                                           "(HiveD's PodBindAttempts)")
    bind_requested: bool = Field(description="the bind is queued (by kube-scheduler's bind "
                                             "call, or by the extender itself)")
    reasons: dict[str, int] = Field(description="each wait reason, with how many nodes gave it")
    victims: dict[str, list[VictimOut]] = Field(description="node -> pods to preempt there")
    model_config = example({
        "uid": "5a1c0d9e-…", "namespace": "default", "name": "web-7", "state": "Waiting",
        "node": "", "bind_attempts": 0, "bind_requested": False,
        "reasons": {"Insufficient cpu": 4990, "node(s) had untolerated taint {dedicated: "
                    "infra}": 10}, "victims": {}})


class StatusDetailOut(StatusOut):
    wait_reasons: dict[str, str] = Field(description="node -> why it cannot take the pod "
                                                     "(what `kubectl describe pod` shows)")


class StatusPageOut(PageInfo):
    items: list[StatusOut]
    counts: dict[str, int] = Field(description="pods in each state, whatever the filter")


class StatusQuery(Schema):
    state: Literal[("",) + STATES] = Field("", description="only pods in this state")
    page: int = Field(1, ge=1, le=MAX_PAGE)
    per_page: int = Field(status_reads.PER_PAGE, ge=1, le=status_reads.MAX_PER_PAGE)


def _asked(read, *args):
    try:
        return read(*args)
    except CommandError as exc:
        raise ApiError(exc.status, exc.message) from None


@router.get("", response={200: StatusPageOut, **STATUS_ERRORS}, summary="List schedule statuses")
def list_statuses(request, query: Query[StatusQuery]):
    """The pods the extender tracks, by namespace and name; wait reasons counted per reason."""
    refuse_repeated(request)
    listing = _asked(status_reads.statuses_page, query.state, query.page, query.per_page)
    page = listing.page
    return {"items": listing.items, "counts": listing.counts, "count": listing.total,
            "page": page.number, "pages": page.paginator.num_pages, "per_page": query.per_page,
            "next_page": page.next_page_number() if page.has_next() else None}


@router.get("/{namespace}/{name}", response={200: StatusDetailOut, **STATUS_ERRORS,
                                             404: ErrorOut},
            summary="One pod's schedule status")
def status_detail(request, namespace: Path[Name], name: Path[Name]):
    """The pod's state, node, bind attempts, victims and every node's wait reason;
    404 when the extender does not track it (never filtered, or bound and gone)."""
    return _asked(status_reads.pod_status, namespace, name)
