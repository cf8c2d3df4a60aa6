"""What the pages show, from the read model, as plain values the templates print.

Why: the cache lives in the owner process (`manage.py watch`), which writes
it into the database in batches (PodRecord, NodeRecord, Transition,
SnapshotSample, ComparerRun) and its live counters into Redis (STATUS_KEY).
This is the one module that reads them for display: templates can neither
do arithmetic nor call methods with arguments, and the pages and their htmx
fragments must print the same values.

Every count and sum is an SQL aggregate (Count, Sum, group by): nothing here
loops over all pods, and the only loops over all nodes are the zones page's
list of names. Lists of pods and nodes are pages (Django's Paginator), so a
page costs the same at 150,000 pods and 5,000 nodes as at 400 and 40.
"""
from dataclasses import dataclass, field
from datetime import timedelta
import time
from urllib.parse import urlencode

import orjson
import redis
from django.core.paginator import Page, Paginator
from django.db.models import (BigIntegerField, Case, Count, Max, Min, Q, Sum, Value, When)
from django.db.models.fields.json import KT
from django.db.models.functions import Cast
from django.utils import timezone

from dashboard.feed.commands import redis_client
from dashboard.feed.owner import STATUS_KEY
from dashboard.models import (ComparerRun, NodeRecord, PodRecord, PodState, SnapshotSample,
                              Transition)

GIB = 1024**3
MIB = 1024**2
RECENT = timedelta(minutes=5)   # "expired/forgotten in the last 5 minutes"
NODES_PER_PAGE = 200
PODS_PER_PAGE = 50
ZONE_NODES_SHOWN = 100   # per zone, on the zones page
STATES = [state.value for state in PodState]  # Pending, Assumed, Added, Expired, Forgotten


# --- small values ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Usage:
    """Requested against allocatable, for one resource."""
    requested: float
    allocatable: float
    unit: str

    @property
    def percent(self) -> int:
        return round(100 * self.requested / self.allocatable) if self.allocatable else 0

    @property
    def text(self) -> str:
        return f"{self.requested:.1f} / {self.allocatable:.1f} {self.unit}"


def cpu(requested_milli, allocatable_milli) -> Usage:
    return Usage((requested_milli or 0) / 1000, (allocatable_milli or 0) / 1000, "cores")


def memory(requested_bytes, allocatable_bytes) -> Usage:
    return Usage((requested_bytes or 0) / GIB, (allocatable_bytes or 0) / GIB, "GiB")


def ago(seconds: float) -> str:
    """How long ago, as people say it: "3 s ago", "4 min ago", "2 h ago"."""
    seconds = max(0, seconds)
    if seconds < 90:
        return f"{seconds:.0f} s ago"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min ago"
    return f"{seconds / 3600:.0f} h ago"


def _since(moment) -> str:
    return ago((timezone.now() - moment).total_seconds())


def _resource_sums():
    """Sum() of the requested/allocatable cpu and memory in NodeRecord's JSON columns."""
    def total(column, key):
        return Sum(Cast(KT(f"{column}__{key}"), BigIntegerField()))
    return {"cpu_requested": total("requested", "milli_cpu"),
            "cpu_allocatable": total("allocatable", "milli_cpu"),
            "memory_requested": total("requested", "memory"),
            "memory_allocatable": total("allocatable", "memory")}


def _usages(sums: dict) -> tuple[Usage, Usage]:
    return (cpu(sums["cpu_requested"], sums["cpu_allocatable"]),
            memory(sums["memory_requested"], sums["memory_allocatable"]))


# --- pods by state --------------------------------------------------------------------------
@dataclass(frozen=True)
class PodCounts:
    pending: int = 0
    assumed: int = 0
    binding_finished: int = 0   # of the assumed ones: bind call returned, expiry clock running
    added: int = 0
    expired: int = 0
    forgotten: int = 0

    @property
    def total(self) -> int:
        return self.pending + self.assumed + self.added + self.expired + self.forgotten

    @property
    def by_state(self) -> list[tuple[str, int]]:
        """(state, count) in the state machine's order, for filters and cards."""
        return [(state, getattr(self, state.lower())) for state in STATES]


def pod_counts() -> PodCounts:
    """Two queries: a group by state (covered by an index), then the finished bindings."""
    counts = {row["state"].lower(): row["n"]
              for row in PodRecord.objects.order_by().values("state").annotate(n=Count("*"))
              if row["state"] in STATES}
    finished = (PodRecord.objects.filter(state=PodState.ASSUMED, binding_finished=True).count()
                if counts.get("assumed") else 0)
    return PodCounts(binding_finished=finished, **counts)


@dataclass(frozen=True)
class RecentOutcomes:
    expired: int
    forgotten: int
    minutes: int


def recent_outcomes() -> RecentOutcomes:
    """Pods expired or forgotten in the last RECENT, from the history (one range query)."""
    rows = (Transition.objects.order_by()
            .filter(at__gte=timezone.now() - RECENT, kind__in=["pod_expired", "pod_forgotten"])
            .values("kind").annotate(n=Count("*")))
    counts = {row["kind"]: row["n"] for row in rows}
    return RecentOutcomes(counts.get("pod_expired", 0), counts.get("pod_forgotten", 0),
                          int(RECENT.total_seconds() // 60))


# --- the owner ------------------------------------------------------------------------------
@dataclass(frozen=True)
class OwnerStatus:
    """The owner's live counters from Redis. state: "live", "absent" (no owner wrote them
    in the last STATUS_TTL seconds) or "unreachable" (Redis did not answer)."""
    state: str
    counters: dict = field(default_factory=dict)
    error: str = ""

    @property
    def live(self) -> bool:
        return self.state == "live"

    @property
    def synced(self) -> bool:
        return bool(self.counters.get("synced"))

    @property
    def seq(self):
        return self.counters.get("seq")

    @property
    def feed_backlog(self):
        return self.counters.get("feed_backlog")

    @property
    def generation(self):
        return self.counters.get("generation")

    @property
    def reported(self) -> str:
        at = self.counters.get("at")
        return ago(time.time() - at) if at else ""


def owner_status() -> OwnerStatus:
    try:
        raw = redis_client().get(STATUS_KEY)
    except redis.RedisError as exc:
        return OwnerStatus("unreachable", error=str(exc))
    if raw is None:
        return OwnerStatus("absent")
    try:
        return OwnerStatus("live", orjson.loads(raw))
    except orjson.JSONDecodeError as exc:
        return OwnerStatus("unreachable", error=f"unreadable status: {exc}")


# --- snapshot and comparer ------------------------------------------------------------------
@dataclass(frozen=True)
class SnapshotLag:
    generation: int        # the latest snapshot's
    taken: str             # how long ago
    cache_generation: int  # the owner's now, else the newest generation in the read model
    cache_source: str      # "live" or "read model"

    @property
    def behind(self) -> int:
        return max(0, self.cache_generation - self.generation)


def snapshot_lag(owner: OwnerStatus) -> SnapshotLag | None:
    sample = SnapshotSample.objects.order_by("-at", "-id").only("at", "generation").first()
    if sample is None:
        return None
    if owner.live and owner.generation is not None:
        cache_generation, source = owner.generation, "live"
    else:
        cache_generation = NodeRecord.objects.aggregate(g=Max("generation"))["g"] or 0
        source = "read model"
    return SnapshotLag(sample.generation, _since(sample.at), cache_generation, source)


DRIFT = [("missed_pods", "missed pods"), ("redundant_pods", "redundant pods"),
         ("wrong_node_pods", "pods on the wrong node"), ("stale_pods", "stale pods"),
         ("missed_nodes", "missed nodes"), ("redundant_nodes", "redundant nodes"),
         ("stale_nodes", "stale nodes"), ("aggregate_mismatches", "aggregate mismatches")]
NOT_DRIFT = [("ghost_nodes", "nodes deleted with pods left"),
             ("unconfirmed_assumed", "assumed pods not bound yet")]


@dataclass(frozen=True)
class ComparerResult:
    clean: bool
    when: str
    at: object
    drift: list[tuple[str, int]]    # (what, how many), non-zero only
    states: list[tuple[str, int]]   # ghosts and unconfirmed assumed pods: states, not drift


def latest_comparison() -> ComparerResult | None:
    run = ComparerRun.objects.order_by("-at", "-id").first()
    if run is None:
        return None

    def counted(fields):
        return [(label, len(run.report.get(key) or ())) for key, label in fields
                if run.report.get(key)]
    return ComparerResult(run.clean, _since(run.at), run.at, counted(DRIFT), counted(NOT_DRIFT))


# --- pages ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Overview:
    pods: PodCounts
    recent: RecentOutcomes
    nodes: int
    missing_nodes: int          # NodeInfos whose node was deleted with pods left
    owner: OwnerStatus
    snapshot: SnapshotLag | None
    comparison: ComparerResult | None
    cpu: Usage
    memory: Usage


def overview(owner: OwnerStatus | None = None) -> Overview:
    owner = owner or owner_status()
    nodes = NodeRecord.objects.aggregate(
        nodes=Count("*"), missing=Count("name", filter=Q(has_node=False)), **_resource_sums())
    cpu_usage, memory_usage = _usages(nodes)
    return Overview(pods=pod_counts(), recent=recent_outcomes(), nodes=nodes["nodes"],
                    missing_nodes=nodes["missing"], owner=owner, snapshot=snapshot_lag(owner),
                    comparison=latest_comparison(), cpu=cpu_usage, memory=memory_usage)


@dataclass(frozen=True)
class NodeRow:
    name: str
    zone: str
    has_node: bool
    cpu: Usage
    memory: Usage
    pods: int
    assumed: int
    generation: int


@dataclass(frozen=True)
class NodePage:
    rows: list[NodeRow]
    page: Page
    total: int
    missing: int


def nodes(page_number=1) -> NodePage:
    """One page of NodeRecords by name, with their assumed pods counted in SQL."""
    records = NodeRecord.objects.order_by("name").only(
        "name", "zone", "has_node", "requested", "allocatable", "pods", "generation")
    page = Paginator(records, NODES_PER_PAGE).get_page(page_number)
    names = [record.name for record in page]
    assumed = dict(PodRecord.objects.order_by()
                   .filter(state=PodState.ASSUMED, node__in=names)
                   .values_list("node").annotate(n=Count("*")))
    rows = [NodeRow(name=r.name, zone=r.zone or "(no zone)", has_node=r.has_node,
                    cpu=cpu(r.requested.get("milli_cpu"), r.allocatable.get("milli_cpu")),
                    memory=memory(r.requested.get("memory"), r.allocatable.get("memory")),
                    pods=r.pods, assumed=assumed.get(r.name, 0), generation=r.generation)
            for r in page]
    missing = NodeRecord.objects.filter(has_node=False).count()
    return NodePage(rows, page, page.paginator.count, missing)


@dataclass(frozen=True)
class ZoneGroup:
    label: str
    count: int      # nodes in the zone; `nodes` holds the first ZONE_NODES_SHOWN of them
    cpu: Usage
    memory: Usage
    nodes: list[tuple[int, str, bool]] = field(default_factory=list)
    # (1-based position in NodeTree.list(), 0 when not in the tree; node name; has_node)

    @property
    def more(self) -> int:
        """Nodes of the zone not listed (past ZONE_NODES_SHOWN)."""
        return self.count - len(self.nodes)


NOT_IN_TREE = "(not in the tree)"


def _zone_label(zone: str, in_tree: bool) -> str:
    if not in_tree:
        return NOT_IN_TREE
    return zone or "(no zone)"


def zones() -> list[ZoneGroup]:
    """Zones in NodeTree order (by their first node's tree_index), each with its first
    ZONE_NODES_SHOWN nodes in tree order; nodes that left the tree (deleted, pods left) last.

    list() interleaves the zones, so a zone's k-th node sits before position k * zones:
    only the rows before ZONE_NODES_SHOWN * zones are read, whatever the cluster's size.
    """
    in_tree = Case(When(tree_index__gte=0, then=Value(True)), default=Value(False))
    sums = (NodeRecord.objects.order_by().annotate(in_tree=in_tree)
            .values("zone", "in_tree")
            .annotate(first=Min("tree_index"), count=Count("name"), **_resource_sums()))
    groups = {}
    for row in sorted(sums, key=lambda r: (not r["in_tree"], r["first"])):
        label = _zone_label(row["zone"], row["in_tree"])
        groups[label] = ZoneGroup(label, row["count"], *_usages(row))
    bound = ZONE_NODES_SHOWN * max(1, len(groups))
    shown = (NodeRecord.objects.order_by("tree_index", "name")
             .filter(tree_index__lt=bound)
             .values_list("zone", "tree_index", "name", "has_node"))
    for zone, index, name, has_node in shown:
        group = groups[_zone_label(zone, index >= 0)]
        if len(group.nodes) < ZONE_NODES_SHOWN:
            group.nodes.append((max(0, index + 1), name, has_node))
    return list(groups.values())


@dataclass(frozen=True)
class PodRow:
    uid: str
    namespace: str
    name: str
    state: str
    node: str
    zone: str
    cpu: str
    memory: str
    priority: int
    detail: str     # the expiry clock of an assumed pod
    changed: str


@dataclass(frozen=True)
class PodPage:
    rows: list[PodRow]
    page: Page
    state: str      # "" for every state
    counts: PodCounts

    @property
    def query(self) -> str:
        """The query string the pager keeps ("state=X&"), so pages stay filtered."""
        return f"{urlencode({'state': self.state})}&" if self.state else ""


class UnknownState(ValueError):
    pass


def _assumed_detail(record, now) -> str:
    if record.state != PodState.ASSUMED:
        return ""
    if not record.binding_finished or record.deadline is None:
        return "binding"
    left = record.deadline - now
    if left >= 0:
        return f"bound, expires in {left:.0f} s"
    return f"bound, expiry overdue by {-left:.0f} s"


def pods(state: str = "", page_number=1) -> PodPage:
    """One page of PodRecords by namespace/name, of one state or all."""
    if state and state not in STATES:
        raise UnknownState(f"unknown state {state!r}: one of {', '.join(STATES)}")
    records = PodRecord.objects.order_by("namespace", "name").only(
        "uid", "namespace", "name", "state", "node", "zone", "binding_finished", "deadline",
        "milli_cpu", "memory", "priority", "changed_at")
    if state:
        records = records.filter(state=state)
    page = Paginator(records, PODS_PER_PAGE).get_page(page_number)
    now = time.time()
    rows = [PodRow(uid=r.uid, namespace=r.namespace, name=r.name, state=r.state, node=r.node,
                   zone=r.zone, cpu=f"{r.milli_cpu}m" if r.milli_cpu else "",
                   memory=f"{r.memory / MIB:.0f} MiB" if r.memory else "",
                   priority=r.priority, detail=_assumed_detail(r, now),
                   changed=_since(r.changed_at))
            for r in page]
    return PodPage(rows, page, state, pod_counts())
