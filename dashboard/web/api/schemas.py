"""The REST API's shapes: what tools send and get back, with examples for the docs.

Why one module: pods, nodes and the actions answer with the same pieces (a
node's aggregates, a transition, an error), and the OpenAPI schema names each
piece once. Path and query values are constrained here too, so bad input is
refused (400) before anything reaches the database or the cache owner.
"""
from datetime import datetime
from typing import Annotated

from ninja import Schema
from pydantic import ConfigDict, Field, StringConstraints

from dashboard.models import PodState
from dashboard.web.api.errors import ApiError

# A Kubernetes name or uid, as a path or query value: printable, at most 253 characters
# (PostgreSQL refuses NUL in text; no name holds control characters).
Name = Annotated[str, StringConstraints(min_length=1, max_length=253,
                                        pattern=r"^[^\x00-\x1f\x7f]+$")]
# A filter value: the same, or empty for no filter (as an empty form field sends it).
Filter = Annotated[str, StringConstraints(max_length=253, pattern=r"^[^\x00-\x1f\x7f]*$")]
MAX_SEQ = 2**63 - 1   # sequence numbers are BIGINT
STATES = [state.value for state in PodState]


def refuse_repeated(request) -> None:
    """Every query parameter of this API holds one value: `q=a&q=b` is a 400, not a guess
    (the framework would quietly take the last one)."""
    for name, values in request.GET.lists():
        if len(values) > 1:
            raise ApiError(400, f"{name[:40]}: given {len(values)} times, expected once")


def example(value: dict) -> ConfigDict:
    """A schema's example, as the docs show it."""
    return ConfigDict(json_schema_extra={"examples": [value]})


class ErrorOut(Schema):
    error: str = Field(description="what went wrong, for people")
    model_config = example({"error": "pod 5a1c… is Added, not Assumed"})


class ValidationErrorOut(ErrorOut):
    detail: list[str] = Field([], description="one message per bad value, when checked "
                                              "against the schema")
    model_config = example({"error": "page: Input should be greater than or equal to 1",
                            "detail": ["page: Input should be greater than or equal to 1"]})


# The errors every operation may answer, documented once: every operation needs a caller
# (401); those that take input refuse bad input (400).
AUTH_ERRORS = {401: ErrorOut}
READ_ERRORS = {400: ValidationErrorOut, **AUTH_ERRORS}
ACTION_ERRORS = {400: ValidationErrorOut, 401: ErrorOut, 403: ErrorOut, 404: ErrorOut,
                 409: ErrorOut, 502: ErrorOut, 503: ErrorOut}


class PageInfo(Schema):
    count: int = Field(description="items matching, on every page")
    page: int = Field(description="this page's number (pods: a page number past the last "
                                  "is a 400; nodes and statuses: it gives the last)")
    pages: int
    per_page: int
    next_page: int | None = Field(description="the next page's number, null on the last")


# --- pods -----------------------------------------------------------------------------------
class PodOut(Schema):
    uid: str
    namespace: str
    name: str
    state: str = Field(description=f"one of {', '.join(STATES)}")
    node: str = Field(description="empty while pending")
    zone: str
    milli_cpu: int = Field(description="requested CPU, millicores")
    memory: int = Field(description="requested memory, bytes")
    scalar_resources: dict[str, int] = Field(
        description="extended resources requested, e.g. {\"nvidia.com/gpu\": 64}")
    priority: int
    binding_finished: bool = Field(description="assumed pods: the bind call returned")
    deadline: float | None = Field(
        description="assumed pods whose binding finished: when they expire (epoch seconds)")
    expires_in: float | None = Field(description="seconds until `deadline` (negative: overdue)")
    stuck: bool = Field(description="assumed, its bind unfinished for minutes")
    changed_at: datetime = Field(description="when its latest transition was recorded")


POD_EXAMPLE = {"uid": "5a1c7e0e-6b0b-4c1e-9d51-7b1f2f0c9a10", "namespace": "team-a",
               "name": "web-7f9c", "state": "Assumed", "node": "node-0003", "zone": "zone-b",
               "milli_cpu": 250, "memory": 268435456, "scalar_resources": {}, "priority": 0,
               "binding_finished": True,
               "deadline": 1763812345.5, "expires_in": 12.4, "stuck": False,
               "changed_at": "2026-11-22T11:52:13.120Z"}


class PodPageOut(PageInfo):
    count_capped: bool = Field(
        description="always false: `count` is exact (kept for tools written when the "
                    "count stopped at 1,000)")
    first: int = Field(description="the position of the first item among all that match "
                                   "(1-based; 0 when there are none)")
    next_cursor: str | None = Field(
        description="`cursor` for the page after this one; null on the last")
    prev_cursor: str | None = Field(
        description="`cursor` for the page before this one; null on the first")
    last_cursor: str = Field(description="`cursor` for the last page")
    items: list[PodOut]
    model_config = example({"count": 120, "count_capped": False, "page": 1, "pages": 3,
                            "per_page": 50, "first": 1, "next_page": 2,
                            "next_cursor": "WyJhZnRlciIsIm5hbWUiLFsidGVhbS1hIiwid2ViLTdmOWMiXV0",
                            "prev_cursor": None, "last_cursor": "WyJiZWZvcmUiLCJuYW1lIixudWxsXQ",
                            "items": [POD_EXAMPLE]})


class TransitionOut(Schema):
    seq: int = Field(description="grows across owner restarts; numbers may be skipped")
    at: datetime
    kind: str = Field(description="pod_assumed, pod_added, pod_expired, node_updated, ...")
    key: str = Field(description="the pod's uid, or the node's name")
    namespace: str
    name: str
    node: str
    from_state: str
    to_state: str
    cause: str = Field(description="watch, relist, bind, reaper, operator, owner, extender "
                                   "or bind deadline")
    actor: str = Field(description="who asked, for commands")
    detail: str = Field(description="why, where it was told: a failed bind's API server "
                                    "answer (status and message), the bind deadline, an "
                                    "operator's reason; empty for most transitions")


TRANSITION_EXAMPLE = {"seq": 48213, "at": "2026-11-22T11:52:13.120Z", "kind": "pod_assumed",
                      "key": POD_EXAMPLE["uid"], "namespace": "team-a", "name": "web-7f9c",
                      "node": "node-0003", "from_state": "Initial", "to_state": "Assumed",
                      "cause": "operator", "actor": "alice", "detail": ""}


class PodDetailOut(PodOut):
    phase: str
    resource_version: str
    labels: dict[str, str]
    seq: int = Field(description="the sequence number of its latest transition")
    history: list[TransitionOut] = Field(
        description="its transitions in sequence order (the newest 500)")
    history_count: int = Field(description="all its recorded transitions")
    model_config = example({**POD_EXAMPLE, "phase": "Pending", "resource_version": "91822",
                            "labels": {"app": "web"}, "seq": 48213,
                            "history": [TRANSITION_EXAMPLE], "history_count": 1})


# --- nodes ----------------------------------------------------------------------------------
class ResourceOut(Schema):
    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    allowed_pod_number: int = 0
    scalar_resources: dict[str, int] = {}


class NodeOut(Schema):
    name: str
    zone: str
    tree_index: int = Field(description="position in NodeTree.list(); -1: not in the tree")
    has_node: bool = Field(description="false: the node was deleted while pods remain on it")
    generation: int
    pods: int
    images: int = Field(description="images present on the node")
    requested: ResourceOut
    non_zero_requested: ResourceOut
    allocatable: ResourceOut


RESOURCE_EXAMPLE = {"milli_cpu": 3250, "memory": 6442450944, "ephemeral_storage": 0,
                    "allowed_pod_number": 0, "scalar_resources": {}}
NODE_EXAMPLE = {"name": "node-0003", "zone": "zone-b", "tree_index": 4, "has_node": True,
                "generation": 4411, "pods": 17, "images": 12, "requested": RESOURCE_EXAMPLE,
                "non_zero_requested": RESOURCE_EXAMPLE,
                "allocatable": dict(RESOURCE_EXAMPLE, milli_cpu=8000, memory=34359738368,
                                    allowed_pod_number=110)}


class NodePageOut(PageInfo):
    items: list[NodeOut]
    model_config = example({"count": 1, "page": 1, "pages": 1, "per_page": 200,
                            "next_page": None, "items": [NODE_EXAMPLE]})


class TaintOut(Schema):
    key: str
    value: str
    effect: str


class HostPortOut(Schema):
    ip: str
    protocol: str
    port: int


class NodeDetailOut(NodeOut):
    labels: dict[str, str]
    taints: list[TaintOut]
    conditions: list[dict[str, str]] = Field(
        description="type, status, reason, message, lastTransitionTime (those present)")
    unschedulable: bool = Field(description="cordoned")
    host_ports: list[HostPortOut]
    pods_by_state: dict[str, int] = Field(description="the read model's pods on it, by state")
    changed_at: datetime
    model_config = example({**NODE_EXAMPLE, "labels": {"kubernetes.io/os": "linux"},
        "taints": [{"key": "nvidia.com/gpu", "value": "", "effect": "NoSchedule"}],
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        "unschedulable": False, "host_ports": [
        {"ip": "0.0.0.0", "protocol": "TCP", "port": 8080}],
        "pods_by_state": {"Assumed": 2, "Added": 15}, "changed_at": "2026-11-22T11:52:13Z"})


# --- zones, snapshot, comparer, events ------------------------------------------------------
class ZoneOut(Schema):
    zone: str
    nodes: list[str] = Field(description="in NodeTree.list() order")


class RoundRobinOut(Schema):
    zone: str = Field(description="the zone NodeTree.next() takes its next node from")
    node: str = Field(description="that node")


class ZonesOut(Schema):
    zones: list[ZoneOut] = Field(description="in the order list() first visits them")
    not_in_tree: list[str] = Field(description="nodes deleted while pods remain on them")
    round_robin: RoundRobinOut | None = Field(
        description="where the round robin goes next, as the live owner reports it; "
                    "null without a live owner")
    model_config = example({"zones": [{"zone": "zone-a", "nodes": ["node-0000", "node-0002"]},
                                      {"zone": "zone-b", "nodes": ["node-0001"]}],
                            "not_in_tree": [],
                            "round_robin": {"zone": "zone-b", "node": "node-0001"}})


class SnapshotSampleOut(Schema):
    at: datetime
    generation: int = Field(description="the snapshot's")
    cache_generation: int = Field(description="the cache's when the snapshot was taken")


class SnapshotLatestOut(SnapshotSampleOut):
    changed_nodes: list[str] = Field(description="nodes changed since the previous snapshot, "
                                                 "most recently changed first")


class SnapshotOut(Schema):
    latest: SnapshotLatestOut | None = Field(description="null until a snapshot was taken")
    history: list[SnapshotSampleOut] = Field(description="the latest samples, oldest first")
    model_config = example({
        "latest": {"at": "2026-11-22T11:52:13Z", "generation": 4411, "cache_generation": 4413,
                   "changed_nodes": ["node-0003"]},
        "history": [{"at": "2026-11-22T11:52:12Z", "generation": 4409,
                     "cache_generation": 4409},
                    {"at": "2026-11-22T11:52:13Z", "generation": 4411,
                     "cache_generation": 4413}]})


class ComparerOut(Schema):
    at: datetime = Field(description="when the latest attempt ended")
    clean: bool = Field(description="no drift between the cache and the cluster, nor "
                                    "between the pages' rows and the cache")
    report: dict = Field(description="compare()'s findings by kind (missed_pods, "
                                     "overdue_binds, ...), the owner's pending pods against "
                                     "the lists (pending_missed, pending_redundant: uids; "
                                     "pending_stale: [uid, held version, listed version]), "
                                     "and the read model's rows found "
                                     "wrong (rows_missing, rows_extra, rows_stale: each "
                                     "[\"pod\" or \"node\", uid or name, the row's [state, "
                                     "node] or generation, the cache's], null where there "
                                     "is none; rows_compared false when the rows were not "
                                     "compared); empty when the attempt failed")
    error: str = Field(description="why the latest attempt could not compare; \"\" when it did")
    last_clean_at: datetime | None = Field(description="when the cache was last found clean")
    model_config = example({"at": "2026-11-22T11:50:00Z", "clean": True,
                            "report": {"missed_pods": [], "redundant_pods": []}, "error": "",
                            "last_clean_at": "2026-11-22T11:50:00Z"})


class EventsOut(Schema):
    events: list[TransitionOut] = Field(description="in sequence order")
    next_since: int = Field(description="pass as `since` to get what follows, with no gaps")
    more: bool = Field(description="true when `limit` cut the answer short: ask again now")
    pruned_below: int = Field(description="transitions numbered below this were pruned (0: "
                                          "none): a `since` under it minus one missed some")
    model_config = example({"events": [TRANSITION_EXAMPLE], "next_since": 48213,
                            "more": False, "pruned_below": 0})


# --- actions --------------------------------------------------------------------------------
class AggregatesOut(Schema):
    pods: int
    requested: ResourceOut
    non_zero_requested: ResourceOut
    allocatable: ResourceOut


AGGREGATES_EXAMPLE = {"pods": 17, "requested": RESOURCE_EXAMPLE,
                      "non_zero_requested": RESOURCE_EXAMPLE, "allocatable": RESOURCE_EXAMPLE}


class ActionOut(Schema):
    uid: str
    changed: bool
    node: str = ""
    before: AggregatesOut | None = Field(None, description="the node's aggregates before")
    after: AggregatesOut | None = Field(None, description="and after")
    model_config = example({"uid": POD_EXAMPLE["uid"], "changed": True, "node": "node-0003",
                            "before": AGGREGATES_EXAMPLE,
                            "after": dict(AGGREGATES_EXAMPLE, pods=16)})


# An operator's reason for an action, kept in the audit: one line of printable text.
Reason = Annotated[str, StringConstraints(max_length=500, pattern=r"^[^\x00-\x1f\x7f]*$")]


class AssumeIn(Schema):
    namespace: Name
    name: Name
    node: Name
    force: bool = Field(False, description="assume even where the scheduling algorithm's "
                                           "filters refuse the node (recorded in the audit)")
    reason: Reason = Field("", description="why, in the audit (optional)")
    model_config = ConfigDict(extra="forbid", json_schema_extra={
        "examples": [{"namespace": "team-a", "name": "web-7f9c", "node": "node-0003"}]})


class ActionIn(Schema):
    reason: Reason = Field("", description="why, in the audit and, for forget, as the "
                                           "cause on the pod's timeline (optional)")
    model_config = ConfigDict(extra="forbid", json_schema_extra={
        "examples": [{"reason": "node-0003 is being drained by hand"}]})


class AssumeOut(Schema):
    uid: str
    namespace: str
    name: str
    node: str
    forced_past: str | None = Field(None, description="with force: why the filters refused "
                                                      "the node (null when it fits)")
    before: AggregatesOut | None
    after: AggregatesOut | None
    task_id: str = Field(description="the Celery task binding it")
    model_config = example({"uid": POD_EXAMPLE["uid"], "namespace": "team-a",
                            "name": "web-7f9c", "node": "node-0003",
                            "before": AGGREGATES_EXAMPLE,
                            "after": dict(AGGREGATES_EXAMPLE, pods=18),
                            "task_id": "3f0c6f1e-0e57-4a55-9d0f-6c2b8f1d2a77"})


# --- why a pending pod is not running (scheduling.diagnosis) ---------------------------------
class ReasonCountOut(Schema):
    reason: str = Field(description="kube-scheduler's own words")
    count: int = Field(description="how many nodes give it")


class ReasonNodesOut(ReasonCountOut):
    nodes: list[str] = Field(description="the nodes that give it (a node short of two "
                                         "resources is under both, as kube-scheduler counts)")


class ShortOut(Schema):
    resource: str = Field(description="cpu (millicores), memory and ephemeral-storage "
                                      "(bytes), pods, or an extended resource (count)")
    asks: int
    free: int
    allocatable: int


class NodeVerdictOut(Schema):
    node: str
    filter: str = Field(description="the first of kube-scheduler's filters that refuses it")
    reasons: list[str] = Field(description="as kube-scheduler counts them")
    details: list[str] = Field(description="the same with the amounts or the taint")
    resolvable: bool = Field(description="evicting pods could cure it")
    short: list[ShortOut]


class ClosestNodeOut(Schema):
    node: str
    short: list[ShortOut]
    details: list[str]


class VictimOut(Schema):
    uid: str
    namespace: str
    name: str
    priority: int


class PreemptionOut(Schema):
    eligible: bool = Field(description="false for preemptionPolicy Never")
    helps: bool = Field(description="evicting lower-priority pods would make room")
    message: str = Field(description="kube-scheduler's preemption part (empty when it helps)")
    node: str | None = Field(description="where it would make room")
    victims: list[VictimOut]
    candidates: list[str] = Field(description="every node where eviction would make room")
    reasons: list[ReasonCountOut] = Field(description="why the other nodes cannot be helped")


class DiagnosedPodOut(Schema):
    uid: str
    namespace: str
    name: str
    priority: int


class SchedulerWordOut(Schema):
    type: str
    status: str
    reason: str = ""
    message: str = ""
    lastTransitionTime: str = ""


class DiagnosisOut(Schema):
    pod: DiagnosedPodOut
    message: str = Field(description="kube-scheduler's FailedScheduling message for the pod, "
                                     "computed from the cache")
    filter_message: str = Field(description="its filters' part alone")
    total_nodes: int
    fits: bool = Field(description="some node takes the pod now (kube-scheduler has not "
                                   "placed it yet, or refuses it for what `unchecked` names)")
    feasible: list[str] = Field(description="the nodes that take it")
    reasons: list[ReasonNodesOut] = Field(description="the largest group first")
    nodes: list[NodeVerdictOut] = Field(description="every refusing node")
    closest: list[ClosestNodeOut] = Field(description="the nodes refused only for "
                                                      "resources, the least short first")
    preemption: PreemptionOut | None = Field(description="the dry run (null when it fits)")
    unchecked: list[str] = Field(description="what kube-scheduler checks and the cache cannot")
    computed_at_seq: int = Field(description="the owner's event number when computed")
    kube_scheduler: SchedulerWordOut | None = Field(
        description="kube-scheduler's own last word: the pod's PodScheduled=False condition "
                    "(null when it has written none)")
    model_config = example({
        "pod": {"uid": "0c1d…", "namespace": "why", "name": "case-cpu", "priority": 0},
        "message": "0/7 nodes are available: 1 Too many pods, 1 node(s) were unschedulable, "
                   "2 node(s) had untolerated taint(s), 4 Insufficient cpu. no new claims to "
                   "deallocate, preemption: 0/7 nodes are available: 7 Preemption is not "
                   "helpful for scheduling.",
        "filter_message": "0/7 nodes are available: 1 Too many pods, 1 node(s) were "
                          "unschedulable, 2 node(s) had untolerated taint(s), 4 Insufficient cpu.",
        "total_nodes": 7, "fits": False, "feasible": [],
        "reasons": [{"reason": "Insufficient cpu", "count": 4,
                     "nodes": ["small-0", "small-1", "small-2", "tiny-0"]}],
        "nodes": [{"node": "small-1", "filter": "NodeResourcesFit",
                   "reasons": ["Insufficient cpu"],
                   "details": ["Insufficient cpu: asks 64, 0.4 free of 4"], "resolvable": False,
                   "short": [{"resource": "cpu", "asks": 64000, "free": 400,
                              "allocatable": 4000}]}],
        "closest": [], "unchecked": [], "computed_at_seq": 1234, "kube_scheduler": None,
        "preemption": {"eligible": True, "helps": False, "node": None, "victims": [],
                       "candidates": [],
                       "message": "preemption: 0/7 nodes are available: 7 Preemption is not "
                                  "helpful for scheduling.",
                       "reasons": [{"reason": "Preemption is not helpful for scheduling",
                                    "count": 7}]}})
