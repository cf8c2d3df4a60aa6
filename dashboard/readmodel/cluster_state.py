"""The scheduler cache as plain values, as a checkpoint keeps it and the history replays it.

Why one module for both: a checkpoint (written by the owner) and the replay of the
transitions after it (read by the web) must agree on every field, so the shapes, the
encoding and the replay of one transition live here together. No Django: the owner's
writer encodes a state captured from the cache, the web decodes and replays it.

What is kept is what the pages show of the past: each cached pod (namespace, name, node,
Assumed or Added, binding finished, requests, non-zero requests, priority) and each
NodeInfo (zone, allocatable, whether its node exists, cordoned, taints, images,
generation), and the NodeTree's zones in order. A node's requested resources and pod
count are summed from its pods, as NodeInfo sums them.
"""
import gc
import zlib
from contextlib import contextmanager

import orjson

from schedcache.events import (
    NODE_ADDED,
    NODE_REMOVED,
    NODE_UPDATED,
    POD_ADDED,
    POD_ASSUMED,
    POD_BINDING_FINISHED,
    POD_CONFIRMED,
    POD_EXPIRED,
    POD_FORGOTTEN,
    POD_REMOVED,
    POD_UPDATED,
)
from schedcache.nodetree import REGION_LABEL, ZONE_LABEL, NodeTree

from dashboard.wire.live import OWNER_LEADING

FORMAT = 1                 # the encoding's version, kept in every checkpoint
COMPRESSION = 6            # zlib level: at 150,000 pods no slower than 1 here, a quarter smaller
CHUNK = 5000               # pods a piece of the encoding

# A pod: [namespace, name, node, state, binding_finished, requested, non_zero, priority]
NAMESPACE, NAME, NODE, STATE, BOUND, REQUESTED, NON_ZERO, PRIORITY = range(8)
# A node: [[region, zone], allocatable, has_node, unschedulable, taints, images, generation]
# (the zone as a pair: the NodeTree's key joins them with a NUL, which PostgreSQL's JSON
# refuses)
ZONE, ALLOCATABLE, HAS_NODE, UNSCHEDULABLE, TAINTS, IMAGES, GENERATION = range(7)

# The transitions that set a pod (with the requests its `replay` carries), and that take
# it out of the cache.
POD_SETS = {POD_ASSUMED: "Assumed", POD_CONFIRMED: "Added", POD_ADDED: "Added",
            POD_UPDATED: "Added"}
POD_LEAVES = (POD_FORGOTTEN, POD_EXPIRED, POD_REMOVED)
NODE_SETS = (NODE_ADDED, NODE_UPDATED)
NOTHING = [0, 0, 0, 0, {}]     # a resource entry of nothing requested or allocatable


@contextmanager
def collector_paused():
    """No cyclic garbage collection while a state of hundreds of thousands of lists (none
    of them cyclic) is built, decoded or encoded: the collector's passes over them cost
    more than the work itself and hold the GIL throughout (bench/timetravel_bench.py)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# --- resources as compact lists -------------------------------------------------------------
def resource_entry(resource) -> list:
    """A schedcache Resource as [milli_cpu, memory, ephemeral_storage, allowed_pod_number,
    scalar_resources]."""
    return [resource.milli_cpu, resource.memory, resource.ephemeral_storage,
            resource.allowed_pod_number, dict(resource.scalar_resources)]


def resource_dict(entry) -> dict:
    """An entry as Resource.as_dict() writes it (the read model's and the API's shape)."""
    milli_cpu, memory, ephemeral, pods, scalars = entry
    return {"milli_cpu": milli_cpu, "memory": memory, "ephemeral_storage": ephemeral,
            "allowed_pod_number": pods, "scalar_resources": dict(scalars)}


def add_entry(total: list, entry) -> None:
    """Add `entry` into `total` in place."""
    total[0] += entry[0]
    total[1] += entry[1]
    total[2] += entry[2]
    total[3] += entry[3]
    if entry[4]:
        scalars = total[4]
        for name, amount in entry[4].items():
            scalars[name] = scalars.get(name, 0) + amount


GPU = "nvidia.com/gpu"   # the extended resource the heat map's GPU view shows


def percent(requested, allocatable):
    """requested / allocatable in percent, rounded to 0.1; None where nothing is allocatable
    (the node has none of the resource). The read model's node rows and a moment's heat
    map both judge use by it."""
    if not allocatable:
        return None
    return round(100.0 * (requested or 0) / allocatable, 1)


NO_ZONE = ["", ""]


def zone_pair(key: str) -> list:
    """A NodeTree zone key ("region:\\x00:zone") as [region, zone]."""
    region, _, zone = (key or "").partition(":\x00:")
    return [region, zone]


def zone_display(pair) -> str:
    """[region, zone] as people write it ("region/zone"), as the read model's rows do."""
    region, zone = pair
    return f"{region}/{zone}" if region else zone


def _node_object(name: str, pair) -> dict:
    """The least node the NodeTree files under the zone `pair`."""
    labels = {k: v for k, v in zip((REGION_LABEL, ZONE_LABEL), pair) if v}
    return {"metadata": {"name": name, "labels": labels}}


# --- what a transition carries to be replayed ------------------------------------------------
def pod_replay(info) -> list:
    """A cached pod's PodInfo as a transition's `replay`: [requested, non_zero, priority]."""
    return [resource_entry(info.requested), resource_entry(info.non_zero_requested),
            info.priority]


def node_replay(info, zone_key: str) -> list:
    """A NodeInfo as a node transition's `replay`: [[region, zone], allocatable,
    unschedulable, taints, images]."""
    spec = (info.node or {}).get("spec") or {}
    taints = [{"key": t.get("key", ""), "value": t.get("value", ""),
               "effect": t.get("effect", "")} for t in spec.get("taints") or ()]
    return [zone_pair(zone_key), resource_entry(info.allocatable), bool(spec.get("unschedulable")),
            taints, len(info.image_states)]


class ClusterState:
    """The cache at sequence number `seq`: pods (uid -> pod list), nodes (name -> node
    list) and the NodeTree (zones, and each zone's nodes in order)."""

    def __init__(self, seq=0, pods=None, nodes=None, tree=None):
        self.seq = seq
        self.pods = pods if pods is not None else {}
        self.nodes = nodes if nodes is not None else {}
        self.tree = tree if tree is not None else NodeTree()
        self.aggregates = None    # node -> its sums, once reconstructed (readmodel/moment.py)

    # --- from the cache, to bytes and back ----------------------------------------------
    @classmethod
    def captured(cls, seq, node_infos: dict, assumed: dict, zones: list,
                 replay_of=pod_replay) -> "ClusterState":
        """From the owner's capture: NodeInfo copies by name (immutable), assumed pod key
        -> binding finished, and the tree's [(zone key, [node names])]; `replay_of` gives
        a PodInfo's [requested, non_zero, priority] (pod_replay, or a memo of it)."""
        zone_of = {name: zone for zone, names in zones for name in names}
        pods, nodes = {}, {}
        for name, info in node_infos.items():
            if info.has_node:
                replay = node_replay(info, zone_of.get(name, ""))
                nodes[name] = [replay[0], replay[1], True, replay[2], replay[3], replay[4],
                               info.generation]
            else:
                nodes[name] = [NO_ZONE, list(NOTHING), False, False, [], 0, info.generation]
            for pod in info.pods:
                bound = assumed.get(pod.key)
                requested, non_zero, priority = replay_of(pod)
                pods[pod.key] = [pod.namespace, pod.name, name,
                                 "Added" if bound is None else "Assumed", bool(bound),
                                 requested, non_zero, priority]
        return cls(seq, pods, nodes, _tree(zones))

    def encode(self) -> bytes:
        """Lines of JSON, compressed: a header (seq, zones, nodes), then the pods CHUNK at a
        time. In pieces, because one C call over 150,000 pods (a single dumps, a single
        compress) holds the GIL for seconds, and the owner's thread shares the process."""
        zones = [[zone_pair(zone), self.tree.nodes_in(zone)] for zone in self.tree.zones]
        compressor = zlib.compressobj(COMPRESSION)
        parts = [compressor.compress(orjson.dumps({"format": FORMAT, "seq": self.seq,
                                                   "zones": zones, "nodes": self.nodes}))]
        pods = list(self.pods.items())
        for start in range(0, len(pods), CHUNK):
            parts.append(compressor.compress(
                b"\n" + orjson.dumps(dict(pods[start:start + CHUNK]))))
        parts.append(compressor.flush())
        return b"".join(parts)

    @classmethod
    def decoded(cls, blob: bytes) -> "ClusterState":
        header, *chunks = zlib.decompress(blob).split(b"\n")
        doc = orjson.loads(header)
        if doc.get("format") != FORMAT:
            raise ValueError(f"a checkpoint of format {doc.get('format')!r}; this reads {FORMAT}")
        pods = {}
        for chunk in chunks:
            pods.update(orjson.loads(chunk))
        return cls(doc["seq"], pods, doc["nodes"], _tree(doc["zones"], paired=True))

    def copy(self) -> "ClusterState":
        """A state to replay on, sharing this one's pod and node lists: replaying replaces a
        list, never changes one, so this one stays as it was (a decoded checkpoint is
        reused by the reconstructions that start from it)."""
        zones = [[zone_pair(zone), self.tree.nodes_in(zone)] for zone in self.tree.zones]
        return ClusterState(self.seq, dict(self.pods), dict(self.nodes),
                            _tree(zones, paired=True))

    # --- replaying the history ----------------------------------------------------------
    def replay(self, seq, kind, key, namespace, name, node, generation, replay) -> None:
        """Apply one transition (the Transition columns replaying needs)."""
        self.seq = seq
        if kind in POD_SETS:
            requested, non_zero, priority = replay or (NOTHING, NOTHING, 0)
            before = self.pods.get(key)
            if before is not None and before[NODE] != node:
                self._touch(before[NODE], generation)
            # a binding finishes only after the assumption (POD_BINDING_FINISHED)
            self.pods[key] = [namespace, name, node, POD_SETS[kind], False, requested,
                              non_zero, priority]
            self._touch(node, generation)
        elif kind == POD_BINDING_FINISHED:
            pod = self.pods.get(key)
            if pod is not None:   # a new list: a copy() shares the old one
                self.pods[key] = [*pod[:BOUND], True, *pod[BOUND + 1:]]
        elif kind in POD_LEAVES:
            pod = self.pods.pop(key, None)
            self._touch(pod[NODE] if pod is not None else node, generation)
        elif kind in NODE_SETS and replay is not None:   # None: removed in the same flush
            zone, allocatable, unschedulable, taints, images = replay
            before = self.nodes.get(key)
            if before is not None and before[HAS_NODE]:
                self.tree.update_node(None, _node_object(key, zone))
            else:
                self.tree.add_node(_node_object(key, zone))
            self.nodes[key] = [zone, allocatable, True, unschedulable, taints, images,
                               generation]
        elif kind == NODE_REMOVED:
            self.tree.remove_node(_node_object(key, NO_ZONE))
            if key in self.nodes:
                self.nodes[key] = [NO_ZONE, list(NOTHING), False, False, [], 0, generation]
        elif kind == OWNER_LEADING:
            # A new owner's cache starts empty and fills from its own lists.
            self.pods, self.nodes, self.tree = {}, {}, NodeTree()

    def _touch(self, node_name, generation):
        """A pod came or went: the node's generation moves; a deleted node whose last pod
        left is gone, as the cache drops it."""
        node = self.nodes.get(node_name)
        if node is None:
            if node_name:
                self.nodes[node_name] = [NO_ZONE, list(NOTHING), False, False, [], 0,
                                         generation]
            return
        self.nodes[node_name] = [*node[:GENERATION], generation]   # a copy() shares `node`

    def drop_empty_ghosts(self, pods_by_node: dict) -> None:
        """Forget the deleted nodes no pod holds any more (the cache keeps a NodeInfo of a
        deleted node only while pods remain on it)."""
        for name in [n for n, node in self.nodes.items()
                     if not node[HAS_NODE] and not pods_by_node.get(n)]:
            del self.nodes[name]


def _tree(zones, paired=False) -> NodeTree:
    """A NodeTree of [(zone, [names in order])], the zone a key (or [region, zone] pair)."""
    tree = NodeTree()
    for zone, names in zones:
        for name in names:
            tree.add_node(_node_object(name, zone if paired else zone_pair(zone)))
    return tree
