"""Why a pending pod is not running: kube-scheduler's verdict, computed from the cache.

For each node the first filter that refuses the pod, in kube-scheduler's order
(NodeUnschedulable, NodeName, TaintToleration, NodeAffinity, NodePorts,
NodeResourcesFit, InterPodAffinity), with its reasons in kube-scheduler's words
and, where a person needs them, the amounts ("Insufficient cpu: asks 4, 1.5 free
of 8"). The summary is kube-scheduler's FailedScheduling message: the reasons
counted (a node counts once per reason: a full node short of cpu is both `Too
many pods` and `Insufficient cpu`), as `COUNT REASON` sorted as strings, then the
post-filter part: DynamicResources' `no new claims to deallocate` and the
preemption's dry run (which changes nothing). When preemption can help, the
message has no post-filter part, as kube-scheduler's does not (it nominates).
Every rule here is checked against the recording in
shared/k8s-wire/why-pending/cases.json (tests/scheduling/test_sched_diagnosis.py).

Not modelled, so named in `unchecked` rather than guessed: volumes (the cache
holds no PersistentVolumeClaims), topology spread constraints (the cache does not
keep them), nominated pods, PodDisruptionBudgets. For a node refused by
inter-pod affinity the dry run evicts nothing (kube-scheduler might, when a
victim is the pod that matched).
"""
import heapq
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from operator import attrgetter

from . import predicates, preemption
from .noderecords import LiveRecords
from .podaffinity import InterPodAffinity, PlacedPods, own_terms
from .podview import PodView

# kube-scheduler v1.36.2 counts every untolerated taint under one reason (the capture);
# the taint itself is in the node's detail.
UNTOLERATED_TAINTS = "node(s) had untolerated taint(s)"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
NEVER = "not eligible due to preemptionPolicy=Never."
# The DynamicResources plugin's post-filter answer, which comes before the preemption's
# in every recorded message of a pod preemption could not help.
NO_CLAIMS = "no new claims to deallocate"
NO_NODES = "no nodes available to schedule pods"
CLOSEST = 5     # nodes shown as the closest to taking the pod
# kube-scheduler's DefaultPreemption defaults: its dry run stops once it has found
# max(100, 10% of the nodes) candidates.
MIN_CANDIDATES = 100
CANDIDATES_PERCENT = 10

_GiB = 2 ** 30
_UNITS = (("Ti", 2 ** 40), ("Gi", _GiB), ("Mi", 2 ** 20), ("Ki", 2 ** 10))


@lru_cache(maxsize=65536)   # nodes of one kind repeat the same few amounts
def amount(resource: str, value: int) -> str:
    """A resource amount as a person reads it: cores, binary bytes, or a count."""
    if resource == "cpu":
        return f"{value / 1000:g}"
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        for unit, size in _UNITS:
            if abs(value) >= size:
                return f"{round(value / size, 1):g}{unit}"
        return str(value)
    return str(value)


@dataclass
class NodeVerdict:
    """Why one node refuses the pod: the refusing filter, its reasons and the amounts."""
    node: str
    filter: str
    reasons: list
    details: list
    resolvable: bool      # eviction could cure it (kube-scheduler's Unschedulable, not
                          # UnschedulableAndUnresolvable)
    short: list = field(default_factory=list)   # [{resource, asks, free, allocatable}]
    shortness: float = 0.0   # the shortfalls as fractions of the node's size (closest first)

    def as_dict(self) -> dict:
        return {"node": self.node, "filter": self.filter, "reasons": self.reasons,
                "details": self.details, "resolvable": self.resolvable, "short": self.short}


def _histogram(reasons_by_node) -> dict:
    counts = {}
    for reasons in reasons_by_node:
        for reason in reasons:
            counts[reason] = counts.get(reason, 0) + 1
    return counts


def summary(total: int, counts: dict) -> str:
    """`0/N nodes are available: COUNT REASON, ...` sorted as strings, as FitError says it."""
    items = sorted(f"{count} {reason}" for reason, count in counts.items())
    return f"0/{total} nodes are available: {', '.join(items)}."


class _Fit:
    """NodeResourcesFit for one pod: its reasons, whether eviction could cure them (a
    request above the node's allocatable cannot be), and the amounts."""

    # resource -> (the pod's attribute, the record's free attribute, allocatable's attribute)
    _NATIVE = (("cpu", "milli_cpu", "free_cpu"), ("memory", "memory", "free_memory"),
               ("ephemeral-storage", "ephemeral_storage", "free_ephemeral"))

    def __init__(self, view):
        self.view = view
        # (resource, asked, its Insufficient reason, asked as text, free of a record,
        # allocatable of a record): worked out once per pod, not once per node
        self.asks = []
        for name, attr, free_attr in self._NATIVE:
            asked = getattr(view, attr)
            if asked:
                self.asks.append((name, asked, predicates.insufficient(name), amount(name, asked),
                                  attrgetter(free_attr), _allocatable_of(attr)))
        for name, asked in view.scalars:
            self.asks.append((name, asked, predicates.insufficient(name), amount(name, asked),
                              _free_scalar(name), _allocatable_scalar(name)))

    def check(self, record):
        view = self.view
        if predicates.resources_fit(view, record) is None:
            return None
        reasons = predicates.fit_reasons(view, record.free_pods, record.free_cpu,
                                         record.free_memory, record.free_ephemeral,
                                         record.free_scalars)
        details, short, resolvable, shortness = [], [], True, 0.0
        if reasons[0] == predicates.TOO_MANY_PODS:
            pods = record.allocatable.allowed_pod_number
            details.append(f"{predicates.TOO_MANY_PODS}: {pods - record.free_pods} of {pods} "
                           f"pods placed")
            short.append({"resource": "pods", "asks": 1, "free": record.free_pods,
                          "allocatable": pods})
            shortness += (1 - record.free_pods) / max(pods, 1)
        for name, asked, reason, asked_text, free_of, allocatable_of in self.asks:
            if reason not in reasons:
                continue
            cap, free = allocatable_of(record), free_of(record)
            resolvable = resolvable and asked <= cap
            details.append(f"{reason}: asks {asked_text}, {amount(name, free)} free of "
                           f"{amount(name, cap)}")
            short.append({"resource": name, "asks": asked, "free": free, "allocatable": cap})
            shortness += (asked - free) / max(cap, 1)
        return NodeVerdict(record.name, "NodeResourcesFit", reasons, details, resolvable, short,
                           shortness)


def _allocatable_of(attr):
    return lambda record: getattr(record.allocatable, attr)


def _free_scalar(name):
    return lambda record: record.free_scalars.get(name, 0)


def _allocatable_scalar(name):
    return lambda record: record.allocatable.scalar_resources.get(name, 0)


class Diagnosis:
    """One pending pod's diagnosis over one set of NodeRecords (see the module doc)."""

    def __init__(self, pod, records, placed: PlacedPods):
        self.pod = pod
        self.view = PodView(pod)
        self.total = len(records.ordered)
        self.verdicts = []       # NodeVerdict of every refusing node, in NodeTree order
        self.feasible = []       # names of the nodes that take the pod
        self._records = records
        self._affinity = InterPodAffinity(pod, records, placed)
        self._run()
        self.preemption = self._dry_run() if self.total and not self.feasible else None

    # --- the filters ---------------------------------------------------------------------
    def _run(self):
        view, fit, affinity = self.view, _Fit(self.view), self._affinity
        simple = [(predicates.node_unschedulable, "NodeUnschedulable", False)]
        if view.node_name:
            simple.append((predicates.node_name, "NodeName", False))
        simple.append((predicates.taint_toleration, "TaintToleration", False))
        if view.node_matcher is not None:
            simple.append((predicates.node_affinity, "NodeAffinity", False))
        if view.host_ports:
            simple.append((predicates.node_ports, "NodePorts", True))
        check_affinity = affinity.active
        for record in self._records.ordered:
            verdict = None
            for check, name, resolvable in simple:
                reason = check(view, record)
                if reason is not None:
                    verdict = self._simple(record, name, reason, resolvable)
                    break
            else:
                verdict = fit.check(record)
                if verdict is None and check_affinity:
                    reason, resolvable = affinity.check(record)
                    if reason is not None:
                        verdict = NodeVerdict(record.name, "InterPodAffinity", [reason],
                                              [reason], resolvable)
            if verdict is None:
                self.feasible.append(record.name)
            else:
                self.verdicts.append(verdict)

    @staticmethod
    def _simple(record, name, reason, resolvable):
        if name == "TaintToleration":
            # The capture's wording counts; the old per-taint one names the taint.
            return NodeVerdict(record.name, name, [UNTOLERATED_TAINTS], [reason], False)
        return NodeVerdict(record.name, name, [reason], [reason], resolvable)

    # --- the preemption's dry run --------------------------------------------------------
    def _dry_run(self) -> dict:
        """What DefaultPreemption would find, changing nothing."""
        view = self.view
        if not view.may_preempt:
            return {"eligible": False, "helps": False, "message": f"preemption: {NEVER}",
                    "node": None, "victims": [], "candidates": [], "reasons": []}
        by_name = self._records.by_name
        outcome, candidates = {}, []
        enough = max(MIN_CANDIDATES, self.total * CANDIDATES_PERCENT // 100)
        for verdict in self.verdicts:
            if len(candidates) >= enough:
                break     # as kube-scheduler's dry run stops: these are enough to choose from
            record = by_name[verdict.node]
            if not verdict.resolvable:
                outcome[verdict.node] = [NOT_HELPFUL]
            elif not record.count_below(view.priority):
                outcome[verdict.node] = [NO_VICTIMS]
            elif verdict.filter == "InterPodAffinity":
                outcome[verdict.node] = verdict.reasons
            else:
                refusals = preemption.refusals_without_victims(view, record)
                if refusals:
                    outcome[verdict.node] = refusals
                else:
                    candidates.append(record)
        counts = _histogram(outcome.values())
        chosen = preemption.choose(view, candidates)
        if chosen is not None:
            record, victims = chosen
            return {"eligible": True, "helps": True, "message": "", "node": record.name,
                    "victims": [_victim(v) for v in victims],
                    "candidates": sorted(r.name for r in candidates),
                    "reasons": _largest_first(counts)}
        return {"eligible": True, "helps": False, "node": None, "victims": [],
                "message": f"preemption: {summary(self.total, counts)}", "candidates": [],
                "reasons": _largest_first(counts)}

    # --- what it says ---------------------------------------------------------------------
    @property
    def fits(self) -> bool:
        return bool(self.feasible)

    @cached_property
    def counts(self) -> dict:
        """reason -> how many nodes give it (a node once for each of its reasons)."""
        return _histogram(v.reasons for v in self.verdicts)

    def filter_message(self) -> str:
        """kube-scheduler's filter part, or what the cache sees when the pod fits."""
        if not self.total:
            return NO_NODES
        if self.feasible:
            return (f"{len(self.feasible)}/{self.total} nodes can take the pod now: no filter "
                    f"kube-scheduler runs refuses them (kube-scheduler may not have tried yet)")
        return summary(self.total, self.counts)

    def message(self) -> str:
        """kube-scheduler's FailedScheduling message for the pod, as the cache sees it."""
        text = self.filter_message()
        if self.preemption is not None and not self.preemption["helps"]:
            text += f" {NO_CLAIMS}, {self.preemption['message']}"
        return text

    def reasons(self) -> list:
        """[{reason, count, nodes}], the largest group first (a node short of two
        resources is in both groups, as kube-scheduler counts it)."""
        groups = {}
        for verdict in self.verdicts:
            for reason in verdict.reasons:
                groups.setdefault(reason, []).append(verdict.node)
        return [{"reason": reason, "count": len(names), "nodes": names} for reason, names in
                sorted(groups.items(), key=lambda i: (-len(i[1]), i[0]))]

    def closest(self) -> list:
        """The nodes refused only for resources, fewest and smallest shortfalls first."""
        fit = (v for v in self.verdicts if v.filter == "NodeResourcesFit")
        return [{"node": v.node, "short": v.short, "details": v.details}
                for v in heapq.nsmallest(CLOSEST, fit, key=attrgetter("shortness", "node"))]

    def unchecked(self) -> list:
        """What kube-scheduler checks and the cache cannot (so a fit may still fail)."""
        notes = []
        for volume in (self.pod.get("spec") or {}).get("volumes") or ():
            claim = volume.get("persistentVolumeClaim")
            if claim is not None:
                notes.append(f"persistentvolumeclaim \"{claim.get('claimName')}\": claims "
                             f"are not in the cache (kube-scheduler's VolumeBinding checks it)")
            elif volume.get("ephemeral") is not None:
                notes.append(f"ephemeral volume {volume.get('name')!r}: claims are not in "
                             f"the cache")
        return notes

    def as_dict(self) -> dict:
        metadata = self.pod.get("metadata") or {}
        return {"pod": {"uid": metadata.get("uid") or "", "namespace": metadata.get("namespace")
                        or "", "name": metadata.get("name") or "",
                        "priority": self.view.priority},
                "message": self.message(), "filter_message": self.filter_message(),
                "total_nodes": self.total, "fits": self.fits, "feasible": self.feasible,
                "reasons": self.reasons(),
                "nodes": [v.as_dict() for v in self.verdicts],
                "closest": self.closest(), "preemption": self.preemption,
                "unchecked": self.unchecked()}


def _victim(info) -> dict:
    return {"uid": info.key, "namespace": info.namespace, "name": info.name,
            "priority": info.priority}


def _largest_first(counts: dict) -> list:
    """reason -> count, as [{reason, count}] largest first."""
    return [{"reason": reason, "count": count} for reason, count in
            sorted(counts.items(), key=lambda i: (-i[1], i[0]))]


class Diagnoser:
    """Diagnoses pending pods over a cache: its own records of the cache and of the placed
    pods, brought up to date at each diagnosis (only the nodes that changed)."""

    def __init__(self, cache):
        self.live = LiveRecords(cache)
        self.placed = PlacedPods()

    def diagnose(self, pod) -> Diagnosis:
        """The diagnosis of `pod` (a Mapping) over the cache as it is now."""
        records = self.live.refresh()
        metadata, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        affinity, anti_affinity = own_terms(spec, metadata.get("namespace") or "")
        self.placed.refresh(records, groups=bool(affinity or anti_affinity))
        return Diagnosis(pod, records, self.placed)
