"""The pending queue over REST (`GET /api/v1/pending`): what the Pending page lists, for
tools. It runs the page's own query (`dashboard.web.pending.query`), so a tool and a
person see the same pods, in the same order, for the same filters and page. 400 for a
bad filter or a page past the last, 503 without a live owner."""
from django.utils import timezone
from ninja import Query, Router, Schema
from pydantic import Field

from dashboard.web.api.errors import ApiError, owner_answer
from dashboard.web.api.schemas import READ_ERRORS, ErrorOut, Filter, example, refuse_repeated
from dashboard.web.pending import query as pending_query
from dashboard.wire.pending import MAX_LIMIT

router = Router(tags=["pending"])


class PendingQuery(Schema):
    reason: Filter | None = Field(None, description="a first reason, exactly as listed "
                                                     "(`counts.reason`); empty: every reason")
    namespace: Filter | None = Field(None, description="empty: every namespace")
    page: int = Field(1, ge=1, le=pending_query.MAX_PAGE, description=(
        "a page number; one past the last is a 400 naming the last"))
    per_page: int = Field(pending_query.PER_PAGE, ge=1, le=MAX_LIMIT)


class QueuedPodOut(Schema):
    position: int = Field(description="its place in the whole queue (1 first), whatever the "
                                      "filters")
    uid: str
    namespace: str
    name: str
    priority: int
    created: str | None = Field(description="its creationTimestamp, as the API server wrote "
                                            "it (RFC 3339)")
    age: str = Field(description="since then, for people (\"4 min\"); empty when unknown")
    reason: str = Field(description="the reason most nodes give, from the owner's last sweep "
                                    "(every 30 s)")


class QueueCountOut(Schema):
    value: str = Field(description="a reason or a namespace")
    pods: int


class QueuePriorityCountOut(Schema):
    value: int = Field(description="a priority")
    pods: int


class QueueCountsOut(Schema):
    reason: list[QueueCountOut] = Field(description="under the namespace filter; most pods first")
    namespace: list[QueueCountOut] = Field(description="under the reason filter; most pods first")
    priority: list[QueuePriorityCountOut] = Field(description="under both filters")


class QueuePageOut(Schema):
    queued: int = Field(description="pods in the queue, whatever the filters")
    count: int = Field(description="those matching the filters")
    page: int
    pages: int
    per_page: int
    next_page: int | None = Field(description="the next page's number, null on the last")
    counts: QueueCountsOut
    items: list[QueuedPodOut] = Field(description="in kube-scheduler's queue order: the "
                                                   "highest priority first, then the oldest")
    model_config = example({
        "queued": 3, "count": 1, "page": 1, "pages": 1, "per_page": 50, "next_page": None,
        "counts": {"reason": [{"value": "Insufficient nvidia.com/gpu", "pods": 1}],
                   "namespace": [{"value": "ml", "pods": 1}, {"value": "web", "pods": 2}],
                   "priority": [{"value": 1000, "pods": 1}]},
        "items": [{"position": 1, "uid": "0c1d7e0e-6b0b-4c1e-9d51-7b1f2f0c9a10",
                   "namespace": "ml", "name": "train-64-gpus", "priority": 1000,
                   "created": "2026-11-22T11:50:02Z", "age": "4 min",
                   "reason": "Insufficient nvidia.com/gpu"}]})


@router.get("", response={200: QueuePageOut, **READ_ERRORS, 502: ErrorOut, 503: ErrorOut},
            summary="List the pending pods in kube-scheduler's queue order",
            operation_id="list_pending")
def list_pending(request, filters: Query[PendingQuery]):
    """Every pending pod the cache owner's watch shows, in kube-scheduler's queue order (the
    queue's sort, not a promise: a pod backing off steps aside), each with its position,
    age and first reason; the counts by reason, namespace and priority; filtered by reason
    and namespace, a page at a time."""
    refuse_repeated(request)
    try:
        parsed = pending_query.PendingFilters.parse(filters.dict(exclude_none=True))
        listing = owner_answer(pending_query.pending_page, parsed, timezone.now())
    except pending_query.BadFilter as exc:
        raise ApiError(400, str(exc)) from None
    page = listing.page
    return {"queued": listing.queued, "count": listing.total, "page": page.number,
            "pages": page.paginator.num_pages, "per_page": parsed.per_page,
            "next_page": page.next_page_number() if page.has_next() else None,
            "counts": {key: [{"value": value, "pods": pods}
                             for value, pods in listing.counts.get(key, [])]
                       for key in ("reason", "namespace", "priority")},
            "items": [vars(row) for row in listing.rows]}
