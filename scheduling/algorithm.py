"""The SchedulerAlgorithm interface (HiveD's, in snake_case) and the default algorithm.

HiveD's concurrency rules, which every implementation may rely on and
DefaultAlgorithm also enforces with one lock:

- schedule, add_allocated_pod and delete_allocated_pod never run concurrently;
- schedule -> (add_allocated_pod) -> schedule -> ... runs sequentially for all
  pods, so the scheduling view is already protected;
- add_allocated_pod -> delete_allocated_pod runs in order for one pod: once
  allocated, a pod's placement never changes.

Inputs are read only; errors are raised, not returned.
"""
import threading
from typing import Iterable, Optional, Protocol, runtime_checkable

from . import predicates, preemption
from .noderecords import LiveRecords
from .podview import PodView
from .result import ScheduleResult
from .spreading import ZoneRoundRobin


@runtime_checkable
class SchedulerAlgorithm(Protocol):
    def schedule(self, pod, suggested_nodes: Optional[Iterable[str]]) -> ScheduleResult:
        """Bind when a suggested node has room, preempt when room can be made, else wait.

        suggested_nodes: node names, a set or a list (kube-scheduler's order carries
        no meaning; the extender passes a frozenset). A bound node must exist (be a
        current node) and should be suggested.
        """

    # Track all current nodes of the whole cluster.
    def add_node(self, node) -> None: ...
    def update_node(self, old_node, new_node) -> None: ...
    def delete_node(self, node) -> None: ...

    # Track all allocated pods (bound and binding) of the whole cluster.
    def add_allocated_pod(self, pod) -> None: ...
    def delete_allocated_pod(self, pod) -> None: ...


REQUIRED_METHODS = ("schedule", "add_node", "update_node", "delete_node", "add_allocated_pod",
                    "delete_allocated_pod")


class FilterOutcome:
    """The filter pass of one schedule call."""

    __slots__ = ("chosen", "feasible", "reasons", "resolvable")

    def __init__(self, chosen, feasible, reasons, resolvable):
        self.chosen = chosen          # NodeRecord picked by the zone round robin, or None
        self.feasible = feasible      # how many suggested nodes fit (1 when the pass stopped
                                      # at the first: see DefaultAlgorithm.filter)
        self.reasons = reasons        # node name -> refusal
        self.resolvable = resolvable  # NodeRecords refused only for resources/ports


class DefaultAlgorithm:
    """Filter (fit, ports, selector/affinity, taints, unschedulable), spread, preempt.

    Fed from a schedcache Cache: every schedule call first brings the
    algorithm's own Snapshot up to date (`cache.update_snapshot`), which copies
    only the nodes that changed. The node and allocated-pod callbacks are
    therefore no-ops: the cache's owner already applies node events and
    assumes/adds allocated pods, and the next snapshot update reflects them.
    They still take the lock, so HiveD's ordering holds for a caller that
    relies on it. Its records follow the cache (noderecords.LiveRecords).
    """

    name = "default"

    def __init__(self, cache, **options):
        if options:
            raise TypeError(f"DefaultAlgorithm takes no options, got {sorted(options)}")
        self.cache = cache
        self.live = LiveRecords(cache)
        self.spreading = ZoneRoundRobin()
        self.lock = threading.RLock()

    @property
    def snapshot(self):
        return self.live.snapshot

    @property
    def records(self):
        return self.live.records

    # --- SchedulerAlgorithm --------------------------------------------------------------
    def schedule(self, pod, suggested_nodes=None) -> ScheduleResult:
        with self.lock:
            self.refresh()
            view = PodView(pod)
            outcome = self.filter(view, suggested_nodes)
            if outcome.chosen is not None:
                self.spreading.chosen(outcome.chosen)
                return ScheduleResult.bind(outcome.chosen.name)
            picked = preemption.choose(view, outcome.resolvable)
            if picked is not None:
                record, victims = picked
                return ScheduleResult.preempt(record.name, {record.name: victims})
            return ScheduleResult.wait(outcome.reasons)

    def fit_reason(self, pod, node: str) -> Optional[str]:
        """Why `pod` cannot go on `node` by the filters (resources, extended resources,
        ports, selector and affinity, taints), or None when it fits. No side effects."""
        with self.lock:
            self.refresh()
            outcome = self.filter(PodView(pod), frozenset((node,)), every_node=True)
            return None if outcome.chosen is not None else outcome.reasons.get(
                node, predicates.NODE_NOT_FOUND)

    def add_node(self, node):
        with self.lock:
            pass  # the cache tracks nodes; the next refresh sees the change

    def update_node(self, old_node, new_node):
        with self.lock:
            pass

    def delete_node(self, node):
        with self.lock:
            pass

    def add_allocated_pod(self, pod):
        with self.lock:
            pass  # the cache owner assumes/adds the pod; the next refresh counts it

    def delete_allocated_pod(self, pod):
        with self.lock:
            pass

    # --- the parts -----------------------------------------------------------------------
    def refresh(self):
        """Bring the snapshot and the per-node records up to date with the cache."""
        with self.lock:
            self.live.refresh()

    def filter(self, view: PodView, suggested_nodes=None, *, every_node=False) -> FilterOutcome:
        """Run the filters over the suggested nodes (every node when None); no side effects.

        The nodes are visited in the zone round robin's order, starting after the
        node chosen last, so the first feasible node is the one the round robin
        picks: the pass stops there (kube-scheduler's percentageOfNodesToScore
        stops early too, but may then miss its best node; here nothing is missed).
        Only a pod that fits nowhere visits every node, and then every refusal is
        known. `every_node` visits them all anyway (to count the feasible nodes).
        """
        records = self.records
        ordered = records.ordered
        filters = predicates.for_pod(view)
        resolvable_filters = predicates.RESOLVABLE
        start = self.spreading.start(records)
        if suggested_nodes is None:
            suggested = None
        elif isinstance(suggested_nodes, (set, frozenset)):
            suggested = suggested_nodes
        else:
            suggested = frozenset(suggested_nodes)
        reasons, resolvable = {}, []
        chosen, feasible = None, 0
        for part in (ordered[start:], ordered[:start]):
            for record in part:
                if suggested is not None and record.name not in suggested:
                    continue
                for check in filters:
                    reason = check(view, record)
                    if reason is not None:
                        reasons[record.name] = reason
                        if check in resolvable_filters:
                            resolvable.append(record)
                        break
                else:
                    feasible += 1
                    if chosen is None:
                        chosen = record
                        if not every_node:
                            return FilterOutcome(chosen, feasible, {}, [])
        if suggested is not None and len(reasons) + feasible < len(suggested):
            by_name = records.by_name
            for name in suggested:
                if name not in by_name:
                    reasons[name] = predicates.NODE_NOT_FOUND
        return FilterOutcome(chosen, feasible, reasons, resolvable)
