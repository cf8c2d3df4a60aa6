"""What the owner keeps for reading the past: a checkpoint of the whole cache every
`period` seconds, and on each transition what replaying it needs.

Why here and so: a moment of the past is the latest checkpoint before it plus the
transitions after it (dashboard/readmodel/moment.py). The owner's thread only captures:
NodeInfo copies (copy-on-write: O(nodes), no pod is copied), the assumed pods and the
NodeTree's order, at the flush's sequence number. Turning that into rows of bytes (O(pods))
is the writer thread's, off the loop that serves kube-scheduler.
"""
import functools
from dataclasses import dataclass

from schedcache.events import NODE_ADDED, NODE_UPDATED

from dashboard.readmodel.cluster_state import (
    POD_SETS,
    ClusterState,
    collector_paused,
    node_replay,
    pod_entries,
    pod_replay,
)


class PodEntries:
    """A PodInfo's (requested, non_zero, priority) as a checkpoint keeps them (pod_entries),
    shared by every pod with the same requests: the feed's digest shares one Resource among
    pods that request the same, so a checkpoint converts one per distinct request, and
    nothing is kept per pod between checkpoints (a memo per pod cost the owner about
    500 bytes a pod). Only the writer thread uses it, one checkpoint at a time."""

    def __init__(self):
        # (id(requested), id(non_zero), priority) -> (requested, non_zero, entries); the
        # Resources are held, so that their ids cannot be taken by others meanwhile
        self._last, self._now = {}, {}

    def __call__(self, info) -> tuple:
        requested, non_zero = info.requested, info.non_zero_requested
        key = (id(requested), id(non_zero), info.priority)
        known = self._now.get(key) or self._last.get(key)
        if known is None:
            known = (requested, non_zero, pod_entries(info))
        self._now[key] = known
        return known[2]

    def done(self) -> None:
        """The checkpoint is built: requests it did not meet are forgotten."""
        self._last, self._now = self._now, {}


@dataclass(frozen=True)
class Capture:
    """The cache at `seq`, as the flush saw it; `state()` builds the checkpoint from it."""
    seq: int
    at: object                   # datetime
    snapshot_generation: int
    node_infos: dict             # name -> NodeInfo copy
    assumed: dict                # pod key -> binding finished
    zones: list                  # [(zone key, [node names in tree order])]
    entries: PodEntries = None

    def state(self) -> ClusterState:
        if self.entries is None:
            return ClusterState.captured(self.seq, self.node_infos, self.assumed, self.zones)
        state = ClusterState.captured(self.seq, self.node_infos, self.assumed, self.zones,
                                      self.entries)
        self.entries.done()
        return state

    def row(self) -> dict:
        """The Checkpoint row, encoded once (the writer thread calls it before its write's
        database deadline starts: encoding 600,000 pods is seconds of CPU, not of the
        database; a retried write reuses it, as `state()` counts its entries only once)."""
        return self._row

    @functools.cached_property
    def _row(self) -> dict:
        with collector_paused():
            state = self.state()
            return {"seq": self.seq, "at": self.at, "pods": len(state.pods),
                    "nodes": len(state.nodes), "snapshot_generation": self.snapshot_generation,
                    "state": state.encode()}


def capture(cache, seq: int, at, snapshot_generation: int, entries=None) -> Capture:
    """On the owner's thread, the cache's one writer: nothing changes it meanwhile."""
    tree = cache.node_tree
    zones = [(zone, tree.nodes_in(zone)) for zone in tree.zones]
    return Capture(seq, at, snapshot_generation, cache.get_node_name_to_info_map(),
                   cache.assumed_bindings(), zones, entries)


class ReplayNotes:
    """What each transition needs to be replayed, noted as its event is emitted (the pod's
    requests then, not at the flush: a pod assumed and forgotten in one flush is replayed
    with the requests it had). A dict lookup per pod event; node events copy a NodeInfo."""

    def __init__(self, cache):
        self.cache = cache
        self._notes = {}          # event seq -> replay, since the last take
        cache.subscribe(self._on_event)

    def _on_event(self, event):
        if event.kind in POD_SETS:
            info = self.cache.pod_info(event.key)
            if info is not None:
                self._notes[event.seq] = pod_replay(info)
        elif event.kind in (NODE_ADDED, NODE_UPDATED):
            info = self.cache.node_info(event.key)
            if info is not None and info.has_node:
                self._notes[event.seq] = node_replay(
                    info, self.cache.node_tree.zone_of(event.key) or "")

    def take(self) -> dict:
        taken, self._notes = self._notes, {}
        return taken


class Checkpoints:
    """When the owner's next checkpoint is due (every `period` seconds; 0: never)."""

    def __init__(self, period: float, clock):
        self.period, self.clock = period, clock
        self.last = None          # when the latest was captured
        self.entries = PodEntries()   # the writer's, across this owner's checkpoints

    def due(self) -> bool:
        if not self.period:
            return False
        return self.last is None or self.clock() - self.last >= self.period

    def taken(self) -> None:
        self.last = self.clock()
