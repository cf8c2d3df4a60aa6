"""What the owner keeps for reading the past: a checkpoint of the whole cache every
`period` seconds, and on each transition what replaying it needs.

Why here and so: a moment of the past is the latest checkpoint before it plus the
transitions after it (dashboard/readmodel/moment.py). The owner's thread only captures:
NodeInfo copies (copy-on-write: O(nodes), no pod is copied), the assumed pods and the
NodeTree's order, at the flush's sequence number. Turning that into rows of bytes (O(pods))
is the writer thread's, off the loop that serves kube-scheduler.
"""
from dataclasses import dataclass

from schedcache.events import NODE_ADDED, NODE_UPDATED

from dashboard.readmodel.cluster_state import (
    POD_SETS,
    ClusterState,
    collector_paused,
    node_replay,
    pod_replay,
)


class PodReplays:
    """pod_replay of each PodInfo, remembered from one checkpoint to the next: a PodInfo
    never changes (a changed pod is a new one), so only the pods changed since the last
    checkpoint cost a conversion. Only the writer thread uses it, one checkpoint at a time."""

    def __init__(self):
        self._last, self._now = {}, {}      # pod key -> (PodInfo, its replay)

    def __call__(self, info) -> list:
        known = self._last.get(info.key)
        if known is None or known[0] is not info:    # held here: an identity cannot recur
            known = (info, pod_replay(info))
        self._now[info.key] = known
        return known[1]

    def done(self) -> None:
        """The checkpoint is built: what it did not meet is forgotten."""
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
    replays: PodReplays = None

    def state(self) -> ClusterState:
        if self.replays is None:
            return ClusterState.captured(self.seq, self.node_infos, self.assumed, self.zones)
        state = ClusterState.captured(self.seq, self.node_infos, self.assumed, self.zones,
                                      self.replays)
        self.replays.done()
        return state

    def row(self) -> dict:
        """The Checkpoint row (encoded here: the writer thread calls it)."""
        with collector_paused():
            state = self.state()
            return {"seq": self.seq, "at": self.at, "pods": len(state.pods),
                    "nodes": len(state.nodes), "snapshot_generation": self.snapshot_generation,
                    "state": state.encode()}


def capture(cache, seq: int, at, snapshot_generation: int, replays=None) -> Capture:
    """On the owner's thread, the cache's one writer: nothing changes it meanwhile."""
    tree = cache.node_tree
    zones = [(zone, tree.nodes_in(zone)) for zone in tree.zones]
    return Capture(seq, at, snapshot_generation, cache.get_node_name_to_info_map(),
                   cache.assumed_bindings(), zones, replays)


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
        self.replays = PodReplays()   # the writer's, across this owner's checkpoints

    def due(self) -> bool:
        if not self.period:
            return False
        return self.last is None or self.clock() - self.last >= self.period

    def taken(self) -> None:
        self.last = self.clock()
