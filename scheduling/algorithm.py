"""The SchedulerAlgorithm interface (the seed's, in snake_case) and the default algorithm.

Concurrency rules of the seed, which every implementation may rely on and
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

from schedcache import Snapshot

from . import predicates, preemption
from .noderecords import NodeRecords
from .podview import PodView
from .result import ScheduleResult
from .spreading import ZoneRoundRobin


@runtime_checkable
class SchedulerAlgorithm(Protocol):
    def schedule(self, pod, suggested_nodes: Optional[Iterable[str]]) -> ScheduleResult:
        """Bind when a suggested node has room, preempt when room can be made, else wait.

        A bound node must exist (be a current node) and should be suggested.
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
        self.feasible = feasible      # how many suggested nodes fit
        self.reasons = reasons        # node name -> refusal
        self.resolvable = resolvable  # NodeRecords refused only for resources/ports


class DefaultAlgorithm:
    """Filter (fit, ports, selector/affinity, taints, unschedulable), spread, preempt.

    Fed from a schedcache Cache: every schedule call first brings the
    algorithm's own Snapshot up to date (`cache.update_snapshot`), which copies
    only the nodes that changed. The node and allocated-pod callbacks are
    therefore no-ops: the cache's owner already applies node events and
    assumes/adds allocated pods, and the next snapshot update reflects them.
    They still take the lock, so the seed's ordering holds for a caller that
    relies on it.
    """

    name = "default"

    def __init__(self, cache, **options):
        if options:
            raise TypeError(f"DefaultAlgorithm takes no options, got {sorted(options)}")
        self.cache = cache
        self.snapshot = Snapshot()
        self.records = NodeRecords()
        self.spreading = ZoneRoundRobin()
        self.lock = threading.RLock()

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
            self.cache.update_snapshot(self.snapshot)
            # Only the nodes changed since the records' last refresh need new records.
            self.records.refresh(self.snapshot,
                                 self.cache.recently_changed(self.records.generation))

    def filter(self, view: PodView, suggested_nodes=None) -> FilterOutcome:
        """Run the filters over the suggested nodes (every node when None); no side effects."""
        records = self.records
        by_name = records.by_name
        filters = predicates.for_pod(view)
        resolvable_filters = predicates.RESOLVABLE
        count = len(records.ordered)
        start = self.spreading.start(records)
        reasons, resolvable = {}, []
        best, best_distance, feasible = None, count, 0
        names = by_name.keys() if suggested_nodes is None else suggested_nodes
        for name in names:
            record = by_name.get(name)
            if record is None:
                reasons[name] = predicates.NODE_NOT_FOUND
                continue
            for check in filters:
                reason = check(view, record)
                if reason is not None:
                    reasons[name] = reason
                    if check in resolvable_filters:
                        resolvable.append(record)
                    break
            else:
                feasible += 1
                distance = (record.index - start) % count
                if distance < best_distance:
                    best, best_distance = record, distance
        return FilterOutcome(best, feasible, reasons, resolvable)
