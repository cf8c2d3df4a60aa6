"""The cache's transitions over REST, after a sequence number, so a tool can follow them.

The owner's writer appends a flush's transitions in one transaction, flushes in
sequence order, so whatever a reader sees is every transition up to some number:
asking again with `since=next_since` misses none. Numbers grow across owner
restarts but may skip (snapshot updates are not recorded). The history keeps
only the latest transitions (SCHEDVIEW_HISTORY_KEEP): `pruned_below` says which
numbers are gone, so a tool that fell further behind knows it missed some.
"""
from ninja import Query, Router, Schema
from pydantic import Field

from dashboard.models import PrunedHistory, Transition
from dashboard.web.api.schemas import MAX_SEQ, READ_ERRORS, EventsOut, Filter, refuse_repeated

router = Router(tags=["events"])

LIMIT = 100
MAX_LIMIT = 1000


class EventQuery(Schema):
    since: int = Field(0, ge=0, le=MAX_SEQ, description="only transitions after this number")
    limit: int = Field(LIMIT, ge=1, le=MAX_LIMIT)
    key: Filter | None = Field(None, description="only this pod's (uid) or node's (name)")
    kind: Filter | None = Field(None, description="only this kind, e.g. pod_expired")


@router.get("", response={200: EventsOut, **READ_ERRORS}, summary="Transitions since a number",
            operation_id="list_events")
def events(request, query: Query[EventQuery]):
    """Up to `limit` transitions with a sequence number above `since`, oldest first, and the
    `since` that continues after them."""
    refuse_repeated(request)
    rows = Transition.objects.filter(seq__gt=query.since).order_by("seq")
    if query.key:
        rows = rows.filter(key=query.key)
    if query.kind:
        rows = rows.filter(kind=query.kind)
    found = list(rows[:query.limit + 1])
    page = found[:query.limit]
    return {"events": page, "next_since": page[-1].seq if page else query.since,
            "more": len(found) > query.limit, "pruned_below": PrunedHistory.floor()}
