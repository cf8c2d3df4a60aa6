"""Nodes and zones as the pages show them: the node table, one node, the zone tree.

Why apart from read_model: a node's page gathers more than its NodeRecord row
(its pods from PodRecord, its image names from the owner, which the read model
only counts) and the zone tree needs the round robin's position, which only
the owner's status knows. Everything else comes from NodeRecord, in pages or
SQL aggregates, so the pages cost the same at 5,000 nodes as at 40.
"""
import re
from dataclasses import dataclass, field, replace

from django.core.paginator import Page, Paginator
from django.db.models import Count, OuterRef, Subquery
from django.utils import timezone

from dashboard.clients import owner_client
from dashboard.models import NodeRecord, PodRecord, PodState, ZoneTotal
from dashboard.readmodel import read_model
from dashboard.readmodel.read_model import (
    GIB,
    OwnerStatus,
    Usage,
    ago,
    cpu,
    memory,
    owner_status,
    usages,
)
from dashboard.web.nodes.query import NodeFilters
from dashboard.wire.commands import CommandError

NODE_PODS_SHOWN = 200   # on a node's page; the rest are counted
ZONE_NODES_SHOWN = 100  # per zone, on the zones page
IMAGES_TIMEOUT = 1.0    # seconds a node's page waits for the owner's list of its images
ON_NODE = [PodState.ASSUMED, PodState.ADDED]   # what counts on a node (the rest left it)
# A node's name is a DNS subdomain (RFC 1123): anything else cannot name one.
NODE_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")
NO_ZONE = "(no zone)"
NOT_IN_TREE = "(not in the tree)"


class BadNodeName(ValueError):
    pass


class UnknownNode(LookupError):
    pass


# --- a node's resources ---------------------------------------------------------------------
def resources(record: NodeRecord) -> list[tuple[str, Usage]]:
    """(name, Usage) for cpu, memory, pods, ephemeral storage and every extended resource
    the node has or its pods request: requested and non-zero requested against allocatable."""
    req, nz, alloc = record.requested, record.non_zero_requested, record.allocatable
    rows = [("CPU", cpu(req.get("milli_cpu"), alloc.get("milli_cpu"), nz.get("milli_cpu"))),
            ("Memory", memory(req.get("memory"), alloc.get("memory"), nz.get("memory"))),
            ("Pods", Usage(record.pods, alloc.get("allowed_pod_number") or 0, "pods",
                           digits=0))]
    if req.get("ephemeral_storage") or alloc.get("ephemeral_storage"):
        rows.append(("Ephemeral storage",
                     Usage((req.get("ephemeral_storage") or 0) / GIB,
                           (alloc.get("ephemeral_storage") or 0) / GIB, "GiB")))
    wanted = req.get("scalar_resources") or {}
    have = alloc.get("scalar_resources") or {}
    for name in sorted(set(wanted) | set(have)):
        rows.append((name, Usage(wanted.get(name, 0), have.get(name, 0), "", digits=0)))
    return rows


def _extended(rows):
    return [(name, usage) for name, usage in rows[3:] if name != "Ephemeral storage"]


# --- the node table -------------------------------------------------------------------------
@dataclass(frozen=True)
class NodeRow:
    name: str
    zone: str
    has_node: bool
    cpu: Usage
    memory: Usage
    pods: Usage
    extended: list[tuple[str, Usage]]
    assumed: int
    generation: int
    # What explains a node's place in the table: whether the kubelet says it is Ready (None:
    # no Ready condition), cordoned (spec.unschedulable) and its taints.
    ready: bool | None = None
    cordoned: bool = False
    taints: tuple[tuple[str, str, str], ...] = ()   # (key, value, effect)


def ready_of(conditions: list) -> bool | None:
    for condition in conditions or ():
        if condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return None


def node_row(record: NodeRecord, assumed: int) -> NodeRow:
    rows = resources(record)
    return NodeRow(name=record.name, zone=record.zone or NO_ZONE, has_node=record.has_node,
                   cpu=rows[0][1], memory=rows[1][1], pods=rows[2][1], extended=_extended(rows),
                   assumed=assumed, generation=record.generation,
                   ready=ready_of(record.conditions), cordoned=record.unschedulable,
                   taints=tuple((t.get("key", ""), t.get("value") or "", t.get("effect", ""))
                                for t in record.taints or ()))


def _assumed_on(names) -> dict:
    return dict(PodRecord.objects.order_by()
                .filter(state=PodState.ASSUMED, node__in=names)
                .values_list("node").annotate(n=Count("*")))


@dataclass(frozen=True)
class NodePage:
    filters: NodeFilters
    rows: list[NodeRow]
    page: Page
    total: int      # nodes matching the filters
    missing: int    # nodes deleted with pods left, of all

    @property
    def any_extended(self) -> bool:
        """Whether a node of the page has extended resources (else no column for them)."""
        return any(row.extended for row in self.rows)


def nodes(filters: NodeFilters = NodeFilters()) -> NodePage:
    """One page of the nodes the filters leave, in their order, with their assumed pods
    counted in SQL. A page past the last gives the last (5,000 nodes are 25 pages)."""
    totals = list(ZoneTotal.objects.values_list("zone", "nodes", "missing"))
    paginator = Paginator(filters.records(), read_model.NODES_PER_PAGE)
    if not (filters.label or filters.taint or filters.above):
        # what the filters leave is a zone or all: counted by the zones' totals, not by
        # a scan of 20,000 rows (the Paginator's count is a cached property: set here)
        paginator.count = sum(nodes for zone, nodes, _ in totals
                              if not filters.zone or zone == filters.zone)
    page = paginator.get_page(filters.page)
    assumed = _assumed_on([record.name for record in page])
    rows = [node_row(record, assumed.get(record.name, 0)) for record in page]
    missing = sum(missing for _, _, missing in totals)
    return NodePage(filters, rows, page, paginator.count, missing)


def zone_names() -> list[str]:
    """The zones nodes are in, sorted (for the nodes page's zone picker): read off the
    zones' totals, a row a zone, not a pass over every node row (12 ms at 20,000 nodes)."""
    return list(ZoneTotal.objects.filter(nodes__gt=0).order_by("zone")
                .values_list("zone", flat=True).distinct())


def page_names(filters: NodeFilters) -> list[str]:
    """The names on one page of the table (the page a live browser shows)."""
    start = (filters.page - 1) * read_model.NODES_PER_PAGE
    return list(filters.records().values_list("name", flat=True)
                [start:start + read_model.NODES_PER_PAGE])


def node_rows(names) -> list[NodeRow]:
    """The rows of these nodes that still exist, by name (a live push's changed rows)."""
    records = list(NodeRecord.objects.filter(name__in=list(names)).order_by("name"))
    assumed = _assumed_on([record.name for record in records])
    return [node_row(record, assumed.get(record.name, 0)) for record in records]


# --- one node -------------------------------------------------------------------------------
@dataclass(frozen=True)
class NodePod:
    uid: str
    namespace: str
    name: str
    state: str
    binding_finished: bool
    milli_cpu: int
    memory: int

    @property
    def cpu(self) -> str:
        return read_model.cpu_text(self.milli_cpu)

    @property
    def memory_text(self) -> str:
        return read_model.memory_text(self.memory)


@dataclass(frozen=True)
class Image:
    name: str
    size_mib: int
    num_nodes: int   # nodes holding it, when the owner answered


@dataclass(frozen=True)
class NodeDetail:
    row: NodeRow
    position: int                 # 1-based place in NodeTree.list(); 0: not in the tree
    changed: str
    resources: list[tuple[str, Usage]]
    host_ports: list[tuple[str, str, int]]   # (ip, protocol, port)
    image_count: int
    images: list[Image] | None    # None: the owner could not be asked (images_note says why)
    images_note: str
    pods: list[NodePod]
    pod_count: int
    pod_states: list[tuple[str, int]]
    labels: dict
    taints: list[dict]            # {key, value, effect}
    conditions: list[dict]        # {type, status, reason, message, lastTransitionTime}
    unschedulable: bool

    @property
    def more_pods(self) -> int:
        return self.pod_count - len(self.pods)


def check_name(name: str) -> str:
    if not NODE_NAME.fullmatch(name or ""):
        raise BadNodeName(f"{name[:80]!r} is not a node name (a DNS subdomain: lower-case "
                          "letters, digits, '-' and '.', at most 253 characters)")
    return name


def node_images(name: str, owner: OwnerStatus) -> tuple[list[Image] | None, str]:
    """The node's images as the owner's cache holds them (the read model only counts them)."""
    if not owner.live:
        return None, "no live owner to list them"
    try:
        result = owner_client.get_node(name, timeout=IMAGES_TIMEOUT)
    except CommandError as exc:
        return None, exc.message
    return [Image(image, size // 2**20, num_nodes)
            for image, size, num_nodes in result["images"]], ""


def node_detail(name: str, owner: OwnerStatus | None = None,
                images: tuple[list[Image] | None, str] | None = None) -> NodeDetail:
    """One node: its aggregates, host ports, images and the pods on it. `images`, when
    given, are the (images, note) a caller already asked the owner for."""
    record = NodeRecord.objects.filter(name=check_name(name)).first()
    if record is None:
        raise UnknownNode(f"no node {name!r} in the cache")
    on_node = PodRecord.objects.filter(node=name, state__in=ON_NODE)
    states = dict(on_node.order_by().values_list("state").annotate(n=Count("*")))
    pods = [NodePod(p.uid, p.namespace, p.name, p.state, p.binding_finished, p.milli_cpu,
                    p.memory)
            for p in on_node.order_by("namespace", "name").only(
                "uid", "namespace", "name", "state", "binding_finished", "milli_cpu",
                "memory")[:NODE_PODS_SHOWN]]
    images, note = images or node_images(name, owner or owner_status())
    return NodeDetail(
        row=node_row(record, states.get(PodState.ASSUMED, 0)),
        position=max(0, record.tree_index + 1),
        changed=ago((timezone.now() - record.changed_at).total_seconds()),
        resources=resources(record),
        host_ports=[tuple(entry) for entry in record.host_ports],
        image_count=record.images, images=images, images_note=note,
        pods=pods, pod_count=sum(states.values()),
        pod_states=[(state.value, states.get(state, 0)) for state in ON_NODE],
        labels=dict(sorted(record.labels.items())), taints=record.taints,
        conditions=record.conditions, unschedulable=record.unschedulable)


# --- the zone tree --------------------------------------------------------------------------
@dataclass(frozen=True)
class ZoneGroup:
    label: str
    count: int      # nodes in the zone; `nodes` holds the first ZONE_NODES_SHOWN of them
    cpu: Usage
    memory: Usage
    nodes: list[tuple[int, str, bool]] = field(default_factory=list)
    # (1-based position in NodeTree.list(), 0 when not in the tree; node name; has_node)
    next_index: int | None = None   # the zone's node the round robin hands out next (0-based)

    @property
    def more(self) -> int:
        """Nodes of the zone not listed (past ZONE_NODES_SHOWN)."""
        return self.count - len(self.nodes)


@dataclass(frozen=True)
class ZoneTree:
    zones: list[ZoneGroup]
    known: bool             # whether a live owner reported the round robin's position
    next_zone: str = ""     # the zone NodeTree.next() takes its next node from
    next_node: str = ""     # that node, when it is among the zone's listed nodes


def _zone_label(zone: str, in_tree: bool) -> str:
    if not in_tree:
        return NOT_IN_TREE
    return zone or NO_ZONE


def _groups() -> dict:
    """Zones in NodeTree order (by their first node's tree_index), with their totals
    (ZoneTotal) and their first ZONE_NODES_SHOWN nodes in tree order; nodes that left the
    tree (deleted, pods left) last.

    list() interleaves the zones, so a zone's k-th node sits before position k * zones:
    only the rows before ZONE_NODES_SHOWN * zones are read, whatever the cluster's size.
    """
    # a zone's first node: one entry of the (zone, tree_index) index a zone
    first = (NodeRecord.objects.filter(zone=OuterRef("zone"), tree_index__gte=0)
             .order_by("tree_index").values("tree_index")[:1])
    totals = ZoneTotal.objects.filter(nodes__gt=0).annotate(first=Subquery(first)).values()
    groups = {}
    for row in sorted(totals, key=lambda r: (not r["in_tree"], r["first"] or 0)):
        label = _zone_label(row["zone"], row["in_tree"])
        groups[label] = ZoneGroup(label, row["nodes"], *usages(row))
    bound = ZONE_NODES_SHOWN * max(1, len(groups))
    shown = (NodeRecord.objects.order_by("tree_index", "name")
             .filter(tree_index__lt=bound)
             .values_list("zone", "tree_index", "name", "has_node"))
    for zone, index, name, has_node in shown:
        group = groups[_zone_label(zone, index >= 0)]
        if len(group.nodes) < ZONE_NODES_SHOWN:
            group.nodes.append((max(0, index + 1), name, has_node))
    return groups


def next_pick(zone_index: int, zones: list[tuple[str, int, int]]) -> tuple[str, int]:
    """(zone, index in the zone) that NodeTree.next() returns next, from its position:
    the first zone from zone_index on (wrapping) with nodes left in this round, else,
    every zone being exhausted, the first zone's first node. zones: (label, next, count)."""
    if not zones:
        return "", 0
    start = zone_index if zone_index < len(zones) else 0
    for step in range(len(zones)):
        label, index, count = zones[(start + step) % len(zones)]
        if index < count:
            return label, index
    return zones[0][0], 0


def zones(owner: OwnerStatus | None = None) -> ZoneTree:
    """The zone tree, with the round robin's position when a live owner reported it."""
    groups = _groups()
    position = (owner or owner_status()).counters.get("round_robin")
    if not position:
        return ZoneTree(list(groups.values()), known=False)
    order = [(_zone_label(zone, True), index) for zone, index in position["zones"]]
    for label, index in order:
        if label in groups:
            groups[label] = replace(groups[label], next_index=index)
    counts = [(label, index, groups[label].count if label in groups else 0)
              for label, index in order]
    zone, index = next_pick(position["zone_index"], counts)
    group = groups.get(zone)
    node = group.nodes[index][1] if group is not None and index < len(group.nodes) else ""
    return ZoneTree(list(groups.values()), True, zone, node)
