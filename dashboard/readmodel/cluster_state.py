"""The scheduler cache as plain values, as a checkpoint keeps it and the history replays it.

Why one module for both: a checkpoint (written by the owner) and the replay of the
transitions after it (read by the web) must agree on every field, so the shapes, the
encoding and the replay of one transition live here together. No Django: the owner's
writer encodes a state captured from the cache, the web decodes and replays it.

What is kept is what the pages show of the past: each cached pod (namespace, name, node,
Assumed or Added, binding finished, requests, non-zero requests, priority) and each
NodeInfo (zone, allocatable, whether its node exists, cordoned, taints, images,
generation), and the NodeTree's zones in order. A node's requested resources and pod
count are summed from its pods, as NodeInfo sums them, and kept summed as the history
replays (a page of a moment reads the sums, never a pass over every pod).
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

FORMAT = 2                 # the encoding's version, kept in every checkpoint
READS = (1, 2)             # 1: each pod's entries inline, no sums (written until 2026-11-27)
COMPRESSION = 6            # zlib level: at 150,000 pods no slower than 1 here, a quarter smaller
CHUNK = 5000               # pods a piece of the encoding

# A pod: (namespace, name, node, state, binding_finished, requested, non_zero, priority),
# its two resource entries tuples too. Tuples of values the collector does not follow (its
# entries' dicts hold only names and numbers) are untracked by its first pass over them:
# 150,000 lists instead cost every later young pass over a new state about 150 ms, and
# every full pass of the web process 300 ms (bench/README, timetravel).
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
# A node's sums over its pods: [requested, non_zero, pods, {state: pods}, binding finished]
# (a node without pods has none, as a count of zero is never kept)
SUM_REQUESTED, SUM_NON_ZERO, SUM_PODS, SUM_BY_STATE, SUM_FINISHED = range(5)


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


def pod_entry(entry) -> tuple:
    """A pod's resource entry as a state keeps it: a tuple, its extended resources as
    (name, amount) pairs, so that nothing in a pod is an object the collector follows
    (see POD's shape)."""
    # the pairs made before the tuple holding them, so that one pass untracks both
    return entry[0], entry[1], entry[2], entry[3], tuple([*entry[4].items()])


NO_REQUESTS = pod_entry(NOTHING)   # a pod's entry when its transition carried none


def add_entry(total: list, entry) -> None:
    """Add `entry` (a list, its extended resources a dict) into `total` in place."""
    total[0] += entry[0]
    total[1] += entry[1]
    total[2] += entry[2]
    total[3] += entry[3]
    if entry[4]:
        _add_scalars(total[4], entry[4].items(), 1)


def _add_pod_entry(total: list, entry: tuple, sign: int) -> None:
    """Add a pod's entry (pod_entry's) into `total` in place; `sign` -1: take it out."""
    total[0] += sign * entry[0]
    total[1] += sign * entry[1]
    total[2] += sign * entry[2]
    total[3] += sign * entry[3]
    if entry[4]:
        _add_scalars(total[4], entry[4], sign)


def _add_scalars(scalars: dict, pairs, sign: int) -> None:
    """An extended resource whose total comes to nothing is dropped, as schedcache's
    Resource drops it."""
    for name, amount in pairs:
        left = scalars.get(name, 0) + sign * amount
        if left:
            scalars[name] = left
        else:
            scalars.pop(name, None)


def _entry_copy(entry) -> list:
    return [entry[0], entry[1], entry[2], entry[3], dict(entry[4])]


def sums_of(pods: dict) -> dict:
    """node name -> its sums (SUM_*), in one pass over the pods."""
    sums = {}
    for pod in pods.values():
        _count(sums, pod, 1)
    return sums


def _count(sums: dict, pod, sign: int) -> None:
    """Add the pod into its node's sums (`sign` -1: take it out; a node left without pods
    has its sums dropped)."""
    node = pod[NODE]
    entry = sums.get(node)
    if entry is None:
        entry = sums[node] = [[0, 0, 0, 0, {}], [0, 0, 0, 0, {}], 0, {}, 0]
    entry[SUM_PODS] += sign
    if not entry[SUM_PODS]:
        del sums[node]
        return
    _add_pod_entry(entry[SUM_REQUESTED], pod[REQUESTED], sign)
    _add_pod_entry(entry[SUM_NON_ZERO], pod[NON_ZERO], sign)
    by_state, state = entry[SUM_BY_STATE], pod[STATE]
    left = by_state.get(state, 0) + sign
    if left:
        by_state[state] = left
    else:
        del by_state[state]
    entry[SUM_FINISHED] += sign * pod[BOUND]


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
def replay_value(kind: str, text: str):
    """A transition's `replay` JSON text as replay() takes it: a pod's entries as
    pod_entry keeps them, shared by the pods replayed from the same text."""
    value = orjson.loads(text)
    if kind in POD_SETS:
        requested, non_zero, priority = value
        return pod_entry(requested), pod_entry(non_zero), priority
    return value


def pod_replay(info) -> list:
    """A cached pod's PodInfo as a transition's `replay`: [requested, non_zero, priority]."""
    return [resource_entry(info.requested), resource_entry(info.non_zero_requested),
            info.priority]


def pod_entries(info) -> tuple:
    """A cached pod's PodInfo as a state keeps its requests: (requested, non_zero, priority),
    each entry a pod_entry."""
    return (pod_entry(resource_entry(info.requested)),
            pod_entry(resource_entry(info.non_zero_requested)), info.priority)


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
    list), the NodeTree (zones, and each zone's nodes in order), and each node's sums over
    its pods (SUM_*), kept as pods come and go."""

    def __init__(self, seq=0, pods=None, nodes=None, tree=None, sums=None):
        self.seq = seq
        self.pods = pods if pods is not None else {}
        self.nodes = nodes if nodes is not None else {}
        self.tree = tree if tree is not None else NodeTree()
        self.sums = sums if sums is not None else sums_of(self.pods)

    # --- from the cache, to bytes and back ----------------------------------------------
    @classmethod
    def captured(cls, seq, node_infos: dict, assumed: dict, zones: list,
                 entries_of=pod_entries) -> "ClusterState":
        """From the owner's capture: NodeInfo copies by name (immutable), assumed pod key
        -> binding finished, and the tree's [(zone key, [node names])]; `entries_of` gives
        a PodInfo's (requested, non_zero, priority) as pod_entries does (or a memo of it,
        whose entries the pods with the same requests share)."""
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
                requested, non_zero, priority = entries_of(pod)
                pods[pod.key] = (pod.namespace, pod.name, name,
                                 "Added" if bound is None else "Assumed", bool(bound),
                                 requested, non_zero, priority)
        return cls(seq, pods, nodes, _tree(zones))

    def encode(self) -> bytes:
        """Lines of JSON, compressed: a header (seq, zones, nodes, the nodes' sums, and the
        distinct resource entries), then the pods CHUNK at a time, by column (the uids,
        then each field of POD's in turn), the two entries named by their place in the
        header's list: a cluster repeats a few hundred request sets, and columns decode
        to a few long lists instead of a list a pod, then zip together in C. In pieces,
        because one C call over 150,000 pods (a single dumps, a single compress) holds the
        GIL for seconds, and the owner's thread shares the process."""
        zones = [[zone_pair(zone), self.tree.nodes_in(zone)] for zone in self.tree.zones]
        entries, place = [], {}

        def entry_at(entry) -> int:
            found = place.get(entry)
            if found is None:
                found = place[entry] = len(entries)
                entries.append([*entry[:4], dict(entry[4])])   # as a replay writes it
            return found

        uids, pods, pieces = list(self.pods), list(self.pods.values()), []
        for start in range(0, len(pods), CHUNK):
            columns = [list(column) for column in zip(*pods[start:start + CHUNK])]
            columns[REQUESTED] = [entry_at(entry) for entry in columns[REQUESTED]]
            columns[NON_ZERO] = [entry_at(entry) for entry in columns[NON_ZERO]]
            pieces.append([uids[start:start + CHUNK], *columns])
        compressor = zlib.compressobj(COMPRESSION)
        parts = [compressor.compress(orjson.dumps({
            "format": FORMAT, "seq": self.seq, "zones": zones, "nodes": self.nodes,
            "sums": self.sums, "entries": entries}))]   # complete once the pieces are made
        for piece in pieces:
            parts.append(compressor.compress(b"\n" + orjson.dumps(piece)))
        parts.append(compressor.flush())
        return b"".join(parts)

    @classmethod
    def decoded(cls, blob: bytes) -> "ClusterState":
        header, *chunks = zlib.decompress(blob).split(b"\n")
        doc = orjson.loads(header)
        if doc.get("format") not in READS:
            raise ValueError(f"a checkpoint of format {doc.get('format')!r}; this reads "
                             f"{', '.join(map(str, READS))}")
        pods = {}
        if doc["format"] == 1:      # uid -> pod, its entries inline
            for chunk in chunks:
                pods.update((uid, (*pod[:REQUESTED], pod_entry(pod[REQUESTED]),
                                   pod_entry(pod[NON_ZERO]), pod[PRIORITY]))
                            for uid, pod in orjson.loads(chunk).items())
        else:
            entry = [pod_entry(entry) for entry in doc["entries"]].__getitem__   # shared
            for chunk in chunks:
                uids, *columns = orjson.loads(chunk)
                columns[REQUESTED] = map(entry, columns[REQUESTED])
                columns[NON_ZERO] = map(entry, columns[NON_ZERO])
                pods.update(zip(uids, zip(*columns)))
        return cls(doc["seq"], pods, doc["nodes"], _tree(doc["zones"], paired=True),
                   doc.get("sums"))

    def copy(self) -> "ClusterState":
        """A state to replay on, sharing this one's pod and node lists: replaying replaces a
        list, never changes one, so this one stays as it was (a decoded checkpoint is
        reused by the reconstructions that start from it). The sums, changed in place by
        replaying, are copied."""
        zones = [[zone_pair(zone), self.tree.nodes_in(zone)] for zone in self.tree.zones]
        sums = {node: [_entry_copy(requested), _entry_copy(non_zero), pods, dict(by_state),
                       finished]
                for node, (requested, non_zero, pods, by_state, finished) in self.sums.items()}
        return ClusterState(self.seq, dict(self.pods), dict(self.nodes),
                            _tree(zones, paired=True), sums)

    # --- replaying the history ----------------------------------------------------------
    def replay(self, seq, kind, key, namespace, name, node, generation, replay) -> None:
        """Apply one transition (the Transition columns replaying needs)."""
        self.seq = seq
        if kind in POD_SETS:
            requested, non_zero, priority = replay or (NO_REQUESTS, NO_REQUESTS, 0)
            before = self.pods.get(key)
            if before is not None:
                _count(self.sums, before, -1)
                if before[NODE] != node:
                    self._touch(before[NODE], generation)
            # a binding finishes only after the assumption (POD_BINDING_FINISHED)
            pod = self.pods[key] = (namespace, name, node, POD_SETS[kind], False, requested,
                                    non_zero, priority)
            _count(self.sums, pod, 1)
            self._touch(node, generation)
        elif kind == POD_BINDING_FINISHED:
            pod = self.pods.get(key)
            if pod is not None and not pod[BOUND]:
                self.pods[key] = (*pod[:BOUND], True, *pod[BOUND + 1:])
                self.sums[pod[NODE]][SUM_FINISHED] += 1
        elif kind in POD_LEAVES:
            pod = self.pods.pop(key, None)
            if pod is not None:
                _count(self.sums, pod, -1)
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
            self.pods, self.nodes, self.tree, self.sums = {}, {}, NodeTree(), {}

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

    def drop_empty_ghosts(self) -> None:
        """Forget the deleted nodes no pod holds any more (the cache keeps a NodeInfo of a
        deleted node only while pods remain on it)."""
        for name in [n for n, node in self.nodes.items()
                     if not node[HAS_NODE] and n not in self.sums]:
            del self.nodes[name]


def _tree(zones, paired=False) -> NodeTree:
    """A NodeTree of [(zone, [names in order])], the zone a key (or [region, zone] pair)."""
    tree = NodeTree()
    for zone, names in zones:
        for name in names:
            tree.add_node(_node_object(name, zone if paired else zone_pair(zone)))
    return tree
