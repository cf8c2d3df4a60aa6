"""The cache as a whole over REST: the zone tree, the snapshots over time, the comparer."""
from ninja import Query, Router, Schema
from pydantic import Field

from dashboard.models import ComparerRun, NodeRecord, SnapshotSample
from dashboard.readmodel.read_model import last_clean, owner_status
from dashboard.web.api.errors import ApiError
from dashboard.web.api.past import AT_DESCRIPTION, MOMENT_ERRORS, At, moment_of
from dashboard.web.api.schemas import (
    AUTH_ERRORS,
    ComparerOut,
    ErrorOut,
    SnapshotOut,
    ZonesOut,
    refuse_repeated,
)
from dashboard.web.nodes.reads import next_pick

router = Router(tags=["cluster"])

MAX_HISTORY = 1000


class ZonesQuery(Schema):
    at: At | None = Field(None, description=AT_DESCRIPTION + "; with it, round_robin is null")


@router.get("/zones", response={200: ZonesOut, **MOMENT_ERRORS}, summary="The NodeTree",
            operation_id="get_zones")
def zones(request, query: Query[ZonesQuery]):
    """Zones in the order NodeTree.list() first visits them, each with its nodes in list()
    order; nodes that left the tree (deleted while pods remain) apart; and the node the
    round robin hands out next, when a live owner reports its position."""
    refuse_repeated(request)
    if query.at is not None:
        found = moment_of(query.at)
        return {"zones": found.zones(), "round_robin": None,
                "not_in_tree": [n["name"] for n in found.nodes() if not n["has_node"]]}
    groups, not_in_tree = {}, []
    rows = NodeRecord.objects.order_by("tree_index", "name").values_list("zone", "name",
                                                                         "tree_index")
    for zone, name, index in rows:
        if index < 0:
            not_in_tree.append(name)
        else:
            groups.setdefault(zone, []).append(name)
    return {"zones": [{"zone": zone, "nodes": names} for zone, names in groups.items()],
            "not_in_tree": not_in_tree, "round_robin": _round_robin(groups)}


def _round_robin(groups: dict) -> dict | None:
    """The node NodeTree.next() returns next, from the live owner's reported position."""
    position = owner_status().counters.get("round_robin")
    if not position:
        return None
    zone, index = next_pick(position["zone_index"],
                            [(zone, next_index, len(groups.get(zone, ())))
                             for zone, next_index in position["zones"]])
    nodes = groups.get(zone, ())
    return {"zone": zone, "node": nodes[index] if index < len(nodes) else ""}


class SnapshotQuery(Schema):
    history: int = Field(100, ge=0, le=MAX_HISTORY, description="how many samples of history")
    at: At | None = Field(None, description=AT_DESCRIPTION + "; with it, the latest snapshot "
                          "taken up to then")


@router.get("/snapshot", response={200: SnapshotOut, **MOMENT_ERRORS},
            summary="The latest snapshot and the generations before it, now or at a moment",
            operation_id="get_snapshot")
def snapshot(request, query: Query[SnapshotQuery]):
    """The latest snapshot sample (its generation, the cache's, the nodes it changed), and
    the generations of the latest `history` samples, oldest first; with `at`, those taken
    up to a kept moment."""
    refuse_repeated(request)
    samples = SnapshotSample.objects.order_by("-at", "-id")
    if query.at is not None:
        samples = samples.filter(at__lte=moment_of(query.at).at)
    latest = samples.first()
    history = list(samples.defer("changed_nodes")[:query.history]) if latest else []
    return {"latest": latest, "history": history[::-1]}


@router.get("/comparer", response={200: ComparerOut, **AUTH_ERRORS, 404: ErrorOut},
            summary="The latest cache/cluster comparison", operation_id="get_comparer")
def comparer(request):
    """The latest attempt to compare the cache with the listed cluster: clean, its drift, or
    why it could not compare; and when the cache was last found clean."""
    run = ComparerRun.objects.order_by("-at", "-id").first()
    if run is None:
        raise ApiError(404, "no comparison has run yet (Celery beat runs one every "
                            "SCHEDVIEW_COMPARE_PERIOD seconds)")
    clean = last_clean(run)
    return {"at": run.at, "clean": run.clean, "report": run.report, "error": run.error,
            "last_clean_at": clean.at if clean else None}
