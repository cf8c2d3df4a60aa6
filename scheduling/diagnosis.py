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
A pod whose PersistentVolumeClaim does not exist is refused before any node is
tried (VolumeBinding's PreFilter), in the recording's words, when the caller
knows the claims there are. Every rule here is checked against the recording in
shared/k8s-wire/why-pending/cases.json (tests/scheduling/test_sched_diagnosis.py).

Why it is fast enough for the owner's thread (bench/diagnosis_bench.py): a node costs
a few comparisons and one small object; the nodes refused alike share their reasons'
tuple (counted a tuple at a time) and, for filters other than resources fit, their
details; the amounts of a resources refusal are written out only when read.

Not modelled, so named in `unchecked` rather than guessed: claims when the caller does
not know them, ephemeral volumes, topology spread constraints (the cache does not keep
them), nominated pods, PodDisruptionBudgets. For a node refused by inter-pod affinity
the dry run evicts nothing (kube-scheduler might, when a victim is the pod that
matched).
"""
import heapq
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
# VolumeBinding's PreFilter refusal of a missing claim, and the post-filter part
# kube-scheduler v1.36.2 wrote after it (the missing-pvc case: no preemption part).
CLAIM_NOT_FOUND = 'persistentvolumeclaim "{name}" not found'
CLAIM_POST_FILTER = "not found"
CLOSEST = 5     # nodes shown as the closest to taking the pod
MEMO_SHAPES = 4  # resource asks whose refused nodes' explanations are kept (a few MB each
                 # at 5,000 nodes)
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


FIT = "NodeResourcesFit"


class NodeVerdict:
    """Why one node refuses the pod: the refusing filter and its reasons (one tuple shared
    by every node refused alike, so nodes are counted by tuple, not reason by reason).

    What a person reads beside them (`details`, `short`, `shortness`, and for a resources
    refusal whether eviction could cure it) is worked out when first read: the summary and
    the pending pods' sweep never read it, and writing the amounts out is most of a
    refused node's cost. A filter other than resources fit gives every node it refuses
    for one reason the same `explained`."""

    __slots__ = ("record", "filter", "reasons", "_fit", "_explained")

    def __init__(self, record, filter, reasons, explained=None, fit=None):
        self.record = record
        self.filter = filter
        self.reasons = reasons
        self._fit = fit                  # the _Fit that explains a resources refusal
        self._explained = explained      # (details, short, resolvable, shortness, answer)

    def _explain(self):
        if self._explained is None:
            self._explained = self._fit.explain(self.record)
        return self._explained

    @property
    def node(self) -> str:
        return self.record.name

    @property
    def details(self) -> list:
        return self._explain()[0]

    @property
    def short(self) -> list:
        """[{resource, asks, free, allocatable}] of a resources refusal."""
        return self._explain()[1]

    @property
    def resolvable(self) -> bool:
        """Eviction could cure it (kube-scheduler's Unschedulable, not
        UnschedulableAndUnresolvable)."""
        if self._explained is None:
            return self._fit.resolvable(self.record)    # the dry run's question: no text
        return self._explained[2]

    @property
    def shortness(self) -> float:
        """The shortfalls as fractions of the node's size (the closest nodes first)."""
        if self._explained is None:
            return self._fit.shortness(self.record)     # closest()'s question: no text
        return self._explained[3]

    def as_dict(self) -> dict:
        details, short, resolvable, _, answer = self._explain()
        if answer is not None:
            return answer      # a resources refusal's, memoised with its amounts (read-only)
        return {"node": self.record.name, "filter": self.filter, "reasons": list(self.reasons),
                "details": details, "resolvable": resolvable, "short": short}


def summary(total: int, counts: dict) -> str:
    """`0/N nodes are available: COUNT REASON, ...` sorted as strings, as FitError says it."""
    items = sorted(f"{count} {reason}" for reason, count in counts.items())
    return f"0/{total} nodes are available: {', '.join(items)}."


class _Fit:
    """NodeResourcesFit for one pod: which resources a node lacks (one comparison each),
    and on demand the amounts and whether eviction could cure it (a request above the
    node's allocatable cannot be). The reasons and their order are predicates.fit_reasons'."""

    # resource -> (the pod's attribute, the record's free attribute, allocatable's attribute)
    _NATIVE = (("cpu", "milli_cpu", "free_cpu"), ("memory", "memory", "free_memory"),
               ("ephemeral-storage", "ephemeral_storage", "free_ephemeral"))

    def __init__(self, view, memos: dict):
        """`memos`: the Diagnoser's, shape of the asks -> the memo of the nodes' explanations."""
        # (resource, asked, its Insufficient reason, asked as text, free of a record,
        # allocatable of a record) of every resource the pod asks for: once per pod
        self.asks = []
        for name, attr, free_attr in self._NATIVE:
            asked = getattr(view, attr)
            if asked:
                self.asks.append((name, asked, predicates.insufficient(name), amount(name, asked),
                                  attrgetter(free_attr), _allocatable_of(attr)))
        for name, asked in view.scalars:
            self.asks.append((name, asked, predicates.insufficient(name), amount(name, asked),
                              _free_scalar(name), _allocatable_scalar(name)))
        self._limits = [(ask[1], ask[4]) for ask in self.asks]
        self._memos, self._memo = memos, None   # see explain
        self._by_lack = {}    # bit mask of what a node lacks -> its reasons, one shared tuple

    def reasons(self, record):
        """The reasons the node refuses the pod (a tuple shared by the nodes that lack the
        same resources), or None when the pod fits it."""
        lack = 0 if record.free_pods >= 1 else 1
        bit = 2
        for asked, free_of in self._limits:
            if asked > free_of(record):
                lack |= bit
            bit <<= 1
        if not lack:
            return None
        reasons = self._by_lack.get(lack)
        if reasons is None:
            named = [predicates.TOO_MANY_PODS] if lack & 1 else []
            named += [ask[2] for i, ask in enumerate(self.asks) if lack & (2 << i)]
            reasons = self._by_lack[lack] = tuple(named)
        return reasons

    def resolvable(self, record) -> bool:
        """No resource it lacks is asked beyond the node's allocatable (the dry run asks
        it of every refused node: no text)."""
        for _, asked, _, _, free_of, allocatable_of in self.asks:
            if asked > free_of(record) and asked > allocatable_of(record):
                return False
        return True

    def shortness(self, record) -> float:
        """The shortfalls as fractions of the node's size (closest() asks it: no text)."""
        free_pods = record.free_pods
        total = (1 - free_pods) / max(record.allocatable.allowed_pod_number, 1) \
            if free_pods < 1 else 0.0
        for _, asked, _, _, free_of, allocatable_of in self.asks:
            free = free_of(record)
            if asked > free:
                total += (asked - free) / max(allocatable_of(record), 1)
        return total

    def explain(self, record) -> tuple:
        """(details, short, resolvable, shortness, the node's verdict as JSON) of a node that
        refuses the pod, in one pass; the memo keeps it while the node's record lives (its
        generation)."""
        if self._memo is None:
            # node name -> (its record, its explanation): pods asking alike are explained
            # alike. Taken at the first explanation, so that diagnoses nobody reads the
            # amounts of (the pending pods' sweep) do not push the others' memos out.
            self._memo = _memo(self._memos, tuple(ask[:2] for ask in self.asks))
        memo = self._memo.get(record.name)
        if memo is not None and memo[0] is record:
            return memo[1]
        details, short, resolvable, shortness = [], [], True, 0.0
        free_pods = record.free_pods
        if free_pods < 1:
            pods = record.allocatable.allowed_pod_number
            details.append(f"{predicates.TOO_MANY_PODS}: {pods - free_pods} of {pods} "
                           f"pods placed")
            short.append({"resource": "pods", "asks": 1, "free": free_pods,
                          "allocatable": pods})
            shortness = (1 - free_pods) / max(pods, 1)
        for name, asked, reason, asked_text, free_of, allocatable_of in self.asks:
            free = free_of(record)
            if asked <= free:
                continue
            cap = allocatable_of(record)
            resolvable = resolvable and asked <= cap
            details.append(f"{reason}: asks {asked_text}, {amount(name, free)} free of "
                           f"{amount(name, cap)}")
            short.append({"resource": name, "asks": asked, "free": free, "allocatable": cap})
            shortness += (asked - free) / max(cap, 1)
        answer = {"node": record.name, "filter": FIT, "reasons": list(self.reasons(record)),
                  "details": details, "resolvable": resolvable, "short": short}
        explained = details, short, resolvable, shortness, answer
        self._memo[record.name] = record, explained
        return explained


def _memo(memos: dict, shape: tuple) -> dict:
    """The memo of the nodes' explanations for pods asking `shape`, the latest MEMO_SHAPES
    shapes kept (each up to one entry a node). An entry is good while its node's record is
    the live one: a record lives exactly one NodeInfo generation, so a node that changed
    is explained again and the others are not (the pod's page asks every few seconds)."""
    memo = memos.pop(shape, None)
    if memo is None:
        memo = {}
        while len(memos) >= MEMO_SHAPES:
            del memos[next(iter(memos))]       # the least recently asked
    memos[shape] = memo
    return memo


def _allocatable_of(attr):
    return lambda record: getattr(record.allocatable, attr)


def _free_scalar(name):
    return lambda record: record.free_scalars.get(name, 0)


def _allocatable_scalar(name):
    return lambda record: record.allocatable.scalar_resources.get(name, 0)


def claim_keys(pod) -> list:
    """The (namespace, name) of each PersistentVolumeClaim the pod's volumes name: a claim
    is looked up in the pod's own namespace."""
    namespace = (pod.get("metadata") or {}).get("namespace") or ""
    return [(namespace, volume["persistentVolumeClaim"].get("claimName") or "")
            for volume in (pod.get("spec") or {}).get("volumes") or ()
            if volume.get("persistentVolumeClaim") is not None]


def missing_claim(pod, claims):
    """VolumeBinding's PreFilter refusal of a pod whose PersistentVolumeClaim does not exist
    (`claims`: the (namespace, name) of every claim there is), or None."""
    for key in claim_keys(pod):
        if key not in claims:
            return CLAIM_NOT_FOUND.format(name=key[1])
    return None


class Diagnosis:
    """One pending pod's diagnosis over one set of NodeRecords (see the module doc).
    `claims`: the (namespace, name) of the claims there are, or None when unknown."""

    def __init__(self, pod, records, placed: PlacedPods, claims=None, memos=None):
        self.pod = pod
        self.view = PodView(pod)
        self.total = len(records.ordered)
        self.verdicts = []       # NodeVerdict of every refusing node, in NodeTree order
        self.feasible = []       # names of the nodes that take the pod
        self.claims_known = claims is not None
        # a refusal before any node is tried (kube-scheduler's PreFilter): every node gives it
        self.prefilter = missing_claim(pod, claims) if claims is not None else None
        self._records = records
        self._memos = {} if memos is None else memos
        if self.prefilter is None:
            self._affinity = InterPodAffinity(pod, records, placed)
            self._run()
        self.preemption = (self._dry_run() if self.total and not self.feasible
                           and self.prefilter is None else None)

    # --- the filters ---------------------------------------------------------------------
    def _run(self):
        view, fit, affinity = self.view, _Fit(self.view, self._memos), self._affinity
        simple = [(predicates.node_unschedulable, "NodeUnschedulable", False)]
        if view.node_name:
            simple.append((predicates.node_name, "NodeName", False))
        simple.append((predicates.taint_toleration, "TaintToleration", False))
        if view.node_matcher is not None:
            simple.append((predicates.node_affinity, "NodeAffinity", False))
        if view.host_ports:
            simple.append((predicates.node_ports, "NodePorts", True))
        check_affinity = affinity.active
        verdicts, feasible, shared = self.verdicts, self.feasible, {}
        fit_reasons = fit.reasons
        for record in self._records.ordered:
            for check, name, resolvable in simple:
                reason = check(view, record)
                if reason is not None:
                    common = shared.get(reason)
                    if common is None:
                        common = shared[reason] = _refusal(name, reason, resolvable)
                    verdicts.append(NodeVerdict(record, name, *common))
                    break
            else:
                reasons = fit_reasons(record)
                if reasons is not None:
                    verdicts.append(NodeVerdict(record, FIT, reasons, None, fit))
                    continue
                if check_affinity:
                    reason, resolvable = affinity.check(record)
                    if reason is not None:
                        common = shared.get(reason)
                        if common is None:
                            common = shared[reason] = _refusal("InterPodAffinity", reason,
                                                               resolvable)
                        verdicts.append(NodeVerdict(record, "InterPodAffinity", *common))
                        continue
                feasible.append(record.name)

    # --- the preemption's dry run --------------------------------------------------------
    def _dry_run(self) -> dict:
        """What DefaultPreemption would find, changing nothing."""
        view = self.view
        if not view.may_preempt:
            return {"eligible": False, "helps": False, "message": f"preemption: {NEVER}",
                    "node": None, "victims": [], "candidates": [], "reasons": []}
        counts, candidates = {}, []
        enough = max(MIN_CANDIDATES, self.total * CANDIDATES_PERCENT // 100)
        for verdict in self.verdicts:
            if len(candidates) >= enough:
                break     # as kube-scheduler's dry run stops: these are enough to choose from
            record = verdict.record
            if not verdict.resolvable:
                refusals = (NOT_HELPFUL,)
            elif not record.count_below(view.priority):
                refusals = (NO_VICTIMS,)
            elif verdict.filter == "InterPodAffinity":
                refusals = verdict.reasons
            else:
                refusals = preemption.refusals_without_victims(view, record)
                if not refusals:
                    candidates.append(record)
            for reason in refusals:
                counts[reason] = counts.get(reason, 0) + 1
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
    def _groups(self) -> dict:
        """reasons tuple -> the positions in `verdicts` of the nodes refused for exactly
        those reasons (ascending: NodeTree order)."""
        groups = {}
        for position, verdict in enumerate(self.verdicts):
            found = groups.get(verdict.reasons)
            if found is None:
                groups[verdict.reasons] = [position]
            else:
                found.append(position)
        return groups

    @cached_property
    def counts(self) -> dict:
        """reason -> how many nodes give it (a node once for each of its reasons)."""
        if self.prefilter is not None:
            return {self.prefilter: self.total}
        counts = {}
        for reasons, positions in self._groups.items():
            for reason in reasons:
                counts[reason] = counts.get(reason, 0) + len(positions)
        return counts

    def filter_message(self) -> str:
        """kube-scheduler's filter part, or what the cache sees when the pod fits."""
        if not self.total:
            return NO_NODES
        if self.prefilter is not None:
            return f"0/{self.total} nodes are available: {self.prefilter}."
        if self.feasible:
            return (f"{len(self.feasible)}/{self.total} nodes can take the pod now: no filter "
                    f"kube-scheduler runs refuses them (kube-scheduler may not have tried yet)")
        return summary(self.total, self.counts)

    def message(self) -> str:
        """kube-scheduler's FailedScheduling message for the pod, as the cache sees it."""
        text = self.filter_message()
        if self.prefilter is not None and self.total:
            text += f" {CLAIM_POST_FILTER}"
        elif self.preemption is not None and not self.preemption["helps"]:
            text += f" {NO_CLAIMS}, {self.preemption['message']}"
        return text

    def reasons(self) -> list:
        """[{reason, count, nodes}], the largest group first (a node short of two
        resources is in both groups, as kube-scheduler counts it), each group's nodes in
        NodeTree order."""
        if self.prefilter is not None:
            return [{"reason": self.prefilter, "count": self.total,
                     "nodes": [record.name for record in self._records.ordered]}]
        by_reason = {}
        for reasons, positions in self._groups.items():
            for reason in reasons:
                by_reason.setdefault(reason, []).append(positions)
        verdicts, groups = self.verdicts, []
        for reason, lists in by_reason.items():
            positions = lists[0] if len(lists) == 1 else heapq.merge(*lists)
            names = [verdicts[p].record.name for p in positions]
            groups.append({"reason": reason, "count": len(names), "nodes": names})
        groups.sort(key=lambda group: (-group["count"], group["reason"]))
        return groups

    def closest(self) -> list:
        """The nodes refused only for resources, fewest and smallest shortfalls first."""
        fit = (v for v in self.verdicts if v.filter == FIT)
        return [{"node": v.node, "short": v.short, "details": v.details}
                for v in heapq.nsmallest(CLOSEST, fit, key=_closeness)]

    def unchecked(self) -> list:
        """What kube-scheduler checks and the cache cannot (so a fit may still fail)."""
        notes = []
        for volume in (self.pod.get("spec") or {}).get("volumes") or ():
            claim = volume.get("persistentVolumeClaim")
            if claim is not None and not self.claims_known:
                notes.append(f"persistentvolumeclaim \"{claim.get('claimName')}\": claims "
                             f"are not in the cache (kube-scheduler's VolumeBinding checks it)")
            elif volume.get("ephemeral") is not None:
                notes.append(f"ephemeral volume {volume.get('name')!r}: claims are not in "
                             f"the cache")
        return notes

    def as_dict(self, nodes: bool = True) -> dict:
        """The answer as JSON; `nodes`: with every refusing node's verdict (the REST
        answer's), or without them (the pod's page shows the groups and the closest)."""
        metadata = self.pod.get("metadata") or {}
        return {"pod": {"uid": metadata.get("uid") or "", "namespace": metadata.get("namespace")
                        or "", "name": metadata.get("name") or "",
                        "priority": self.view.priority},
                "message": self.message(), "filter_message": self.filter_message(),
                "total_nodes": self.total, "fits": self.fits, "feasible": self.feasible,
                "reasons": self.reasons(),
                "nodes": [v.as_dict() for v in self.verdicts] if nodes else [],
                "closest": self.closest(), "preemption": self.preemption,
                "unchecked": self.unchecked()}


def _refusal(filter_name, reason, resolvable) -> tuple:
    """(reasons, explained) a filter other than resources fit gives every node it refuses
    for `reason`."""
    if filter_name == "TaintToleration":
        # The capture's wording counts; the old per-taint one names the taint.
        return (UNTOLERATED_TAINTS,), ([reason], [], False, 0.0, None)
    return (reason,), ([reason], [], resolvable, 0.0, None)


def _closeness(verdict):
    return verdict.shortness, verdict.record.name


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

    def __init__(self, cache, claims=None):
        """`claims`: a live container of the (namespace, name) of the claims there are
        (the owner's, from the watch), or None when they are not followed."""
        self.live = LiveRecords(cache)
        self.placed = PlacedPods()
        self.claims = claims
        self.memos = {}     # see _memo

    def diagnose(self, pod) -> Diagnosis:
        """The diagnosis of `pod` (a Mapping) over the cache as it is now."""
        records = self.live.refresh()
        metadata, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        affinity, anti_affinity = own_terms(spec, metadata.get("namespace") or "")
        self.placed.refresh(records, terms=affinity + anti_affinity)
        return Diagnosis(pod, records, self.placed, self.claims, self.memos)
