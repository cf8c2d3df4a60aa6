"""What the filters read about each node, precomputed once per NodeInfo generation.

A NodeInfo's `node` is decoded and its resources copied on every read, too slow
to do for 5,000 nodes on every schedule call. A NodeRecord holds the parsed
labels, the filtering taints (as an interned id: nodes share a few taint
sets, so the taint verdict is computed once per set per pod), the
unschedulable flag, the zone and the free resources. Every NodeInfo change
takes a new cache-wide generation, so a record is rebuilt exactly when its
NodeInfo's generation moves; a schedule call after one binding rebuilds one
record. Most moves are pods coming and going: the parsed Node parts (labels,
taints, zone, unschedulable) are then taken from the old record, and the Node
is decoded again only when the Node object itself changed since it was parsed
(`node_changed`: name -> generation of its last node event).
"""
from bisect import bisect_left

from schedcache import Snapshot
from schedcache.events import NODE_ADDED, NODE_REMOVED, NODE_UPDATED
from schedcache.nodetree import zone_key

from .taints import node_filter_taints

_taint_ids = {(): 0}   # taint tuple -> small int; 0 is "no filtering taints"


def taint_set_id(taints: tuple) -> int:
    found = _taint_ids.get(taints)
    if found is None:
        found = _taint_ids[taints] = len(_taint_ids)
    return found


def _priority(pod_info):
    return pod_info.priority


class NodeRecord:
    __slots__ = ("name", "index", "generation", "parsed_generation", "info", "labels", "taints",
                 "taint_id", "unschedulable", "zone", "free_cpu", "free_memory",
                 "free_ephemeral", "free_pods", "free_scalars", "allocatable",
                 "_priorities", "_by_priority")

    def __init__(self, info, index, parsed=None):
        """`parsed`: an older record of the node whose Node object is still current."""
        requested, allocatable = info.requested, info.allocatable
        self.name = info.name
        self.index = index
        self.generation = info.generation
        self.info = info
        if parsed is None:
            node = info.node or {}
            self.parsed_generation = info.generation
            self.labels = (node.get("metadata") or {}).get("labels") or {}
            self.taints = node_filter_taints(node)
            self.taint_id = taint_set_id(self.taints)
            self.unschedulable = bool((node.get("spec") or {}).get("unschedulable"))
            self.zone = zone_key(node)
        else:
            self.parsed_generation = parsed.parsed_generation
            self.labels, self.taints, self.taint_id = parsed.labels, parsed.taints, parsed.taint_id
            self.unschedulable, self.zone = parsed.unschedulable, parsed.zone
        self.allocatable = allocatable     # a copy of its own (NodeInfo hands out copies)
        self.free_cpu = allocatable.milli_cpu - requested.milli_cpu
        self.free_memory = allocatable.memory - requested.memory
        self.free_ephemeral = allocatable.ephemeral_storage - requested.ephemeral_storage
        self.free_pods = allocatable.allowed_pod_number - len(info.pod_keys)
        scalars = dict(allocatable.scalar_resources)
        for name, amount in requested.scalar_resources.items():
            scalars[name] = scalars.get(name, 0) - amount
        self.free_scalars = scalars
        self._priorities = self._by_priority = None

    def _sort_by_priority(self):
        pods = sorted(self.info.pods, key=_priority)
        cpu, memory, ephemeral = [0], [0], [0]
        for pod in pods:
            requested = pod.requested
            cpu.append(cpu[-1] + requested.milli_cpu)
            memory.append(memory[-1] + requested.memory)
            ephemeral.append(ephemeral[-1] + requested.ephemeral_storage)
        self._by_priority = (pods, cpu, memory, ephemeral)
        self._priorities = [p.priority for p in pods]

    def count_below(self, priority) -> int:
        """How many of the node's pods have strictly lower priority."""
        if self._by_priority is None:
            self._sort_by_priority()
        return bisect_left(self._priorities, priority)

    def removal_sums(self):
        """(pods lowest priority first, then running sums of their cpu, memory and ephemeral
        storage requests: entry i is the sum over the first i pods)."""
        if self._by_priority is None:
            self._sort_by_priority()
        return self._by_priority

    def __repr__(self):
        return f"NodeRecord({self.name!r}, index={self.index}, generation={self.generation})"


class NodeRecords:
    """name -> NodeRecord for every node of a Snapshot, kept in step with it."""

    def __init__(self):
        self.by_name = {}
        self.ordered = []          # records in snapshot.node_info_list (NodeTree) order
        self._list = None          # the snapshot list the indexes were taken from
        self._generation = None

    @property
    def generation(self) -> int:
        """The snapshot generation the records were last brought to (0 before any)."""
        return self._generation or 0

    def refresh(self, snapshot, changed=None, node_changed=None):
        """Bring the records to `snapshot`. `changed` (names changed since `generation`, as
        the cache's recently_changed gives them) spares a pass over every node when only
        a few changed; without it, or when nodes came or went, every node is checked.
        `node_changed` (name -> generation of the node's last Node event) lets a record
        keep its parsed Node; without it every changed record decodes its Node again."""
        infos = snapshot.node_info_list
        if infos is self._list and snapshot.generation == self._generation:
            return

        def renewed(record, info, index):
            keep = (record is not None and node_changed is not None
                    and node_changed.get(info.name, 0) <= record.parsed_generation)
            return NodeRecord(info, index, record if keep else None)

        old = self.by_name
        if infos is not self._list:
            by_name, ordered = {}, []
            for index, info in enumerate(infos):
                record = old.get(info.name)
                if record is None or record.generation != info.generation or record.info is not info:
                    record = renewed(record, info, index)
                else:
                    record.index = index
                by_name[record.name] = record
                ordered.append(record)
            self.by_name, self.ordered, self._list = by_name, ordered, infos
        elif changed is not None:
            for name in changed:
                record, info = old.get(name), snapshot.node_info_map.get(name)
                if record is not None and info is not None and record.generation != info.generation:
                    record = renewed(record, info, record.index)
                    self.ordered[record.index] = old[name] = record
        else:
            ordered = self.ordered
            for index, info in enumerate(infos):
                if ordered[index].generation != info.generation:
                    record = renewed(ordered[index], info, index)
                    ordered[index] = record
                    old[record.name] = record
        self._generation = snapshot.generation


NODE_EVENTS = frozenset((NODE_ADDED, NODE_UPDATED, NODE_REMOVED))


class LiveRecords:
    """NodeRecords that follow a cache: its own Snapshot, brought up to date on `refresh`.

    Listens to the cache's node events only to know which Node objects changed (the
    others' parsed labels and taints are kept). The algorithm and the diagnosis each
    hold one: their snapshots move at their own pace.
    """

    def __init__(self, cache):
        self.cache = cache
        self.snapshot = Snapshot()
        self.records = NodeRecords()
        self.node_changed = {}     # node name -> generation of its last Node event
        cache.subscribe(self._on_cache_event)

    def refresh(self) -> NodeRecords:
        """The records brought up to date with the cache (call it where the cache may
        not change meanwhile: the owner's thread, or under the caller's lock)."""
        self.cache.update_snapshot(self.snapshot)
        # Only the nodes changed since the records' last refresh need new records.
        self.records.refresh(self.snapshot, self.cache.recently_changed(self.records.generation),
                             self.node_changed)
        return self.records

    def _on_cache_event(self, event):
        """Runs in the thread changing the cache, under its lock: one dict write, no more."""
        if event.kind in NODE_EVENTS:
            self.node_changed[event.name] = event.generation
