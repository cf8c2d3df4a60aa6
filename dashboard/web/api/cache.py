"""The cache's dump over REST, as kube-scheduler's cache debugger writes it on SIGUSR2:
nodes (requested, allocatable, their pods, the pending pods nominated to them) and the
pending pods, each a page at a time from the cache owner's memory, stamped with the
sequence number and generation the page was taken at, with the comparer's latest
verdict. 503 without a live owner. `manage.py dumpcache` reads every page."""
from ninja import Query, Router, Schema
from pydantic import Field

from dashboard.clients import owner_client
from dashboard.web.api.errors import owner_answer
from dashboard.web.api.schemas import (
    READ_ERRORS,
    ErrorOut,
    Filter,
    ResourceOut,
    example,
    refuse_repeated,
)
from dashboard.wire.cache_dump import DEFAULT_LIMIT, MAX_LIMIT, NODES, PENDING

router = Router(tags=["cache"])

DUMP_ERRORS = {**READ_ERRORS, 502: ErrorOut, 503: ErrorOut}
TIMEOUT = 5.0     # seconds the owner has to answer a page


class DumpQuery(Schema):
    after: Filter = Field("", description="the `next` of the page before; empty for the first")
    limit: int = Field(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT)


class CountsOut(Schema):
    nodes: int = Field(description="NodeInfos, deleted nodes still holding pods included")
    pods: int = Field(description="pods in the cache, assumed ones included")
    assumed: int
    pending: int = Field(description="unbound pods the watch shows")


class VerdictOut(Schema):
    clean: bool = Field(description="no drift between the cache and the cluster")
    found: dict[str, int] = Field(description="how many of each finding (the findings: "
                                              "GET /api/v1/comparer)")


class DumpPageOut(Schema):
    seq: int = Field(description="the owner's sequence number when the page was taken")
    generation: int = Field(description="the cache's generation then")
    counts: CountsOut
    comparer: VerdictOut | None = Field(description="the latest comparison this owner made; "
                                                    "null before its first")
    next: str | None = Field(description="`after` for the page after; null on the last")


class CachedPodOut(Schema):
    uid: str
    namespace: str
    name: str
    phase: str
    assumed: bool = Field(description="assumed by the scheduler, not yet confirmed by the watch")


class PendingPodOut(Schema):
    uid: str
    namespace: str
    name: str
    priority: int
    nominated_node: str = Field(description="status.nominatedNodeName (after a preemption); "
                                            "empty when none")


class DumpNodeOut(Schema):
    name: str
    deleted: bool = Field(description="the node was deleted and pods remain on it")
    generation: int
    requested: ResourceOut
    allocatable: ResourceOut
    pods: list[CachedPodOut]
    nominated_pods: list[PendingPodOut]


class NodeDumpOut(DumpPageOut):
    items: list[DumpNodeOut] = Field(description="nodes by name, after `after`")
    model_config = example({
        "seq": 52311, "generation": 9120, "next": "node-0099",
        "counts": {"nodes": 5000, "pods": 150000, "assumed": 3, "pending": 12},
        "comparer": {"clean": True, "found": {"missed_pods": 0, "redundant_pods": 0}},
        "items": [{"name": "node-0000", "deleted": False, "generation": 8870,
                   "requested": {"milli_cpu": 3100, "memory": 6442450944},
                   "allocatable": {"milli_cpu": 31850, "memory": 132070244352,
                                   "allowed_pod_number": 110},
                   "pods": [{"uid": "5a1c0d9e-…", "namespace": "team", "name": "web-7",
                             "phase": "Running", "assumed": False}],
                   "nominated_pods": []}]})


class PendingDumpOut(DumpPageOut):
    items: list[PendingPodOut] = Field(description="pending pods by uid, after `after`")


def _page(part: str, query: DumpQuery) -> dict:
    return owner_answer(owner_client.dump_cache, part, query.after, query.limit,
                        timeout=TIMEOUT)


@router.get("/dump", response={200: NodeDumpOut, **DUMP_ERRORS},
            summary="The cache's nodes, as upstream's cache debugger dumps them",
            operation_id="dump_cache_nodes")
def dump_nodes(request, query: Query[DumpQuery]):
    """A page of nodes by name: requested and allocatable, the pods on each, the pending
    pods nominated to each; follow `next` until it is null. Each page is read from the
    owner's memory when asked: compare `seq` to tell pages taken at different moments."""
    refuse_repeated(request)
    return _page(NODES, query)


@router.get("/dump/pending", response={200: PendingDumpOut, **DUMP_ERRORS},
            summary="The pending pods, as upstream's cache debugger dumps its queue",
            operation_id="dump_cache_pending")
def dump_pending(request, query: Query[DumpQuery]):
    """A page of the unbound pods the watch shows, by uid, with their priority and
    nominated node; follow `next` until it is null."""
    refuse_repeated(request)
    return _page(PENDING, query)
