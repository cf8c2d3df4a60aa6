"""The scheduler cache: the pod state machine over per-node aggregates.

    Initial --assume--> Assumed --add--> Added <--update--+
       ^                  |   \\                |          |
       +-----forget-------+    \\--expire--> Expired       +--remove--> Deleted
                                     \\--add--> Added

Assumed pods count on their node at once, so the scheduler does not place two
pods into the same room while the bind is in flight. The watch confirms them
(add); a failed bind forgets them; one never confirmed expires `ttl` seconds
after its binding finished (never before, and never when ttl is 0).

Every change to a node takes the next value of one cache-wide generation
counter, and the nodes are kept most-recently-changed last, so a snapshot is
brought up to date by walking back from the newest change to the first node
it already has.
"""
from collections import OrderedDict
import heapq
import marshal
import threading
import time
from typing import NamedTuple

from . import events as ev
from .errors import CacheCorruptedError, CacheError, SnapshotRepairedError
from .images import NO_IMAGES, ImageStates, node_images
from .nodeinfo import NodeInfo
from .nodetree import NodeTree, node_name
from .podinfo import make_pod_info, pod_key
from .resource import EMPTY, node_allocatable
from .selector import matches, parse_selector

_REMEMBERED_EXPIRIES = 10_000  # to tell Expired -> Added from Initial -> Added


class Dump(NamedTuple):
    assumed_pods: set
    nodes: dict


class _Assumption:
    """What the cache keeps of an assumed pod beside its PodInfo: an added pod has none,
    so the cache holds its PodInfo alone (an object a pod less: 56 bytes, issue 26)."""
    __slots__ = ("deadline", "binding_finished")

    def __init__(self):
        self.deadline = None
        self.binding_finished = False


def _pod_node(pod) -> str:
    return ((pod.get("spec") or {}).get("nodeName")) or ""


def _require_node(info, action):
    if not info.node_name:
        raise CacheError(f"pod {info.namespace}/{info.name} has no spec.nodeName, so it "
                         f"cannot be {action}")


def _lean_node(node) -> dict:
    """The node as frozen: no managedFields, and its images only as a placeholder
    (NodeInfo keeps them shared with other nodes': schedcache.images)."""
    lean = dict(node)
    metadata = node.get("metadata")
    if metadata and "managedFields" in metadata:
        lean["metadata"] = {k: v for k, v in metadata.items() if k != "managedFields"}
    status = node.get("status")
    if status and status.get("images"):
        lean["status"] = {**status, "images": None}
    return lean


class Cache:
    """See the module docstring and the contract; every call is atomic (one lock)."""

    def __init__(self, ttl: float = 30.0):
        if ttl is None or ttl < 0:
            raise ValueError("ttl must be 0 (never expire) or a positive number of seconds")
        self.ttl = float(ttl)
        self._lock = threading.RLock()
        self._pods = {}             # key -> PodInfo, assumed or added
        self._assumed = {}          # key -> _Assumption, of the assumed pods
        self._nodes = {}            # node name -> NodeInfo
        self._recent = OrderedDict()  # node name -> None, most recently changed last
        self.node_tree = NodeTree()
        self._images = ImageStates()
        self._generation = 0
        self._events = ev.EventBus()
        self._expired = OrderedDict()

    # --- events and counters ---------------------------------------------------------------
    def subscribe(self, callback):
        """Call `callback(CacheEvent)` for every later transition; returns unsubscribe()."""
        with self._lock:
            return self._events.subscribe(callback)

    @property
    def event_seq(self) -> int:
        """The sequence number of the latest event."""
        return self._events.seq

    @property
    def generation(self) -> int:
        """The newest generation any node has taken."""
        return self._generation

    def node_count(self) -> int:
        """NodeInfos held, including those of deleted nodes that still have pods."""
        return len(self._nodes)

    def pod_count(self) -> int:
        return len(self._pods)

    def assumed_count(self) -> int:
        return len(self._assumed)

    def assumed_bindings(self) -> dict:
        """Assumed pod key -> whether its binding finished: what a checkpoint keeps of the
        assumptions (O(assumed pods), not O(pods))."""
        with self._lock:
            return {key: a.binding_finished for key, a in self._assumed.items()}

    # --- node bookkeeping ------------------------------------------------------------------
    def _touch(self, name, info):
        self._generation += 1
        info._set_generation(self._generation)
        recent = self._recent
        if name in recent:
            recent.move_to_end(name)
        else:
            recent[name] = None

    def _node_info(self, name) -> NodeInfo:
        info = self._nodes.get(name)
        if info is None:
            info = self._nodes[name] = NodeInfo(name)
        return info

    def _drop_if_empty(self, name, info) -> bool:
        if info._s.pods or info.has_node:
            return False
        del self._nodes[name]
        self._recent.pop(name, None)
        return True

    def _place(self, pod_info):
        info = self._node_info(pod_info.node_name)
        info._add_pod(pod_info)
        self._touch(pod_info.node_name, info)

    def _unplace(self, pod_info):
        name = pod_info.node_name
        info = self._nodes[name]
        info._remove_pod(pod_info)
        if not self._drop_if_empty(name, info):
            self._touch(name, info)

    def _replace(self, old, new):
        if old.node_name != new.node_name:
            self._unplace(old)
            self._place(new)
            return
        info = self._nodes[old.node_name]
        info._remove_pod(old)
        info._add_pod(new)
        self._touch(new.node_name, info)

    def _emit_pod(self, kind, pod_info, from_state, to_state, at=None):
        self._events.emit(kind, pod_info.key, pod_info.namespace, pod_info.name,
                          pod_info.node_name, from_state, to_state, self._generation, at)

    # --- pods ------------------------------------------------------------------------------
    @staticmethod
    def _assigned_pod_info(pod, action):
        info = make_pod_info(pod)
        _require_node(info, action)
        return info

    def assume_pod(self, pod):
        """Initial -> Assumed: the pod counts on spec.nodeName from now on."""
        info = self._assigned_pod_info(pod, "assumed")
        with self._lock:
            self._assume(info)

    def _assume(self, info):
        if info.key in self._pods:
            raise CacheError(f"pod {info.namespace}/{info.name} ({info.key}) is in the cache, "
                             f"so it can't be assumed")
        self._place(info)
        self._pods[info.key] = info
        assumption = self._assumed[info.key] = _Assumption()
        self._emit_pod(ev.POD_ASSUMED, info, ev.INITIAL, ev.ASSUMED)
        return assumption

    def assume_pod_if_bind_succeeds(self, pod, bind, now=None) -> bool:
        """The original cache interface: assume only if `bind()` returns true, atomically.

        The bind has finished when the pod is assumed, so its expiry clock starts
        at once. Returns whether the pod was assumed; an exception from bind()
        propagates and changes nothing.
        """
        info = self._assigned_pod_info(pod, "assumed")
        with self._lock:
            if info.key in self._pods:
                raise CacheError(f"pod {info.namespace}/{info.name} ({info.key}) is in the "
                                 f"cache, so it can't be assumed")
            if not bind():
                return False
            assumption = self._assume(info)
            self._finish(assumption, info, time.time() if now is None else now)
            return True

    def finish_binding(self, pod, now=None):
        """Start an assumed pod's expiry clock; a no-op for a pod that is not assumed."""
        key = pod_key(pod)
        with self._lock:
            assumption = self._assumed.get(key)
            if assumption is not None:
                self._finish(assumption, self._pods[key], time.time() if now is None else now)

    def _finish(self, assumption, info, now):
        assumption.binding_finished = True
        assumption.deadline = now + self.ttl if self.ttl > 0 else None
        self._emit_pod(ev.POD_BINDING_FINISHED, info, ev.ASSUMED, ev.ASSUMED, now)

    def forget_pod(self, pod):
        """Assumed -> Initial (the bind failed). A pod not in the cache is a no-op."""
        key = pod_key(pod)
        with self._lock:
            info = self._pods.get(key)
            if info is None:
                return
            if key not in self._assumed:
                raise CacheError(f"pod {info.namespace}/{info.name} ({key}) was added, not "
                                 f"assumed, so it cannot be forgotten")
            if _pod_node(pod) != info.node_name:
                raise CacheError(f"pod {info.namespace}/{info.name} ({key}) was assumed on "
                                 f"{info.node_name!r} but forget names {_pod_node(pod)!r}")
            self._unplace(info)
            del self._pods[key]
            del self._assumed[key]
            self._emit_pod(ev.POD_FORGOTTEN, info, ev.ASSUMED, ev.INITIAL)

    def add_pod(self, pod):
        """Assumed -> Added (confirm), or Initial/Expired -> Added."""
        self._add(self._assigned_pod_info(pod, "added"))

    def add_pod_info(self, info):
        """add_pod for a pod already digested (a PodInfo from `podinfo.make_pod_info` or
        `unpack_pod_info`): the feed digests pods in another process."""
        _require_node(info, "added")
        self._add(info)

    def _add(self, info):
        key = info.key
        with self._lock:
            held = self._pods.get(key)
            if held is None:
                self._place(info)
                self._pods[key] = info
                came_from = ev.EXPIRED if self._expired.pop(key, None) else ev.INITIAL
                self._emit_pod(ev.POD_ADDED, info, came_from, ev.ADDED)
            elif key in self._assumed:
                # The added version replaces the assumed one, on its node if it differs.
                self._replace(held, info)
                self._pods[key] = info
                del self._assumed[key]
                self._emit_pod(ev.POD_CONFIRMED, info, ev.ASSUMED, ev.ADDED)
            else:
                raise CacheError(f"pod {info.namespace}/{info.name} ({key}) was already in "
                                 f"added state")

    def update_pod(self, old, new):
        """Added -> Added: the new version replaces the old one on the same node."""
        key = pod_key(old)
        info = make_pod_info(new)
        if info.key != key:
            raise CacheError(f"update names two different pods ({key} and {info.key})")
        self.update_pod_info(info)

    def update_pod_info(self, info):
        """update_pod for a pod already digested: `info` replaces the pod with its key."""
        key = info.key
        with self._lock:
            held = self._pods.get(key)
            if held is None:
                raise CacheError(f"pod {info.namespace}/{info.name} ({key}) is not added to the "
                                 f"cache, so it cannot be updated")
            if key in self._assumed:
                raise CacheError(f"assumed pod {info.namespace}/{info.name} ({key}) should not "
                                 f"be updated")
            if held.node_name != info.node_name:
                raise CacheCorruptedError(
                    f"pod {info.namespace}/{info.name} ({key}) updated on node "
                    f"{info.node_name!r} but it was added to {held.node_name!r}")
            self._replace(held, info)
            self._pods[key] = info
            self._emit_pod(ev.POD_UPDATED, info, ev.ADDED, ev.ADDED)

    def remove_pod(self, pod):
        """Added or Assumed -> Deleted."""
        key = pod_key(pod)
        with self._lock:
            info = self._pods.get(key)
            if info is None:
                raise CacheError(f"pod {key} is not in the cache, so it cannot be removed")
            named = _pod_node(pod)
            # An empty nodeName comes from a missed delete's last known state: fine.
            if named and named != info.node_name:
                raise CacheCorruptedError(f"pod {info.namespace}/{info.name} ({key}) removed "
                                          f"from {named!r} but it is on {info.node_name!r}")
            was = ev.ASSUMED if key in self._assumed else ev.ADDED
            self._unplace(info)
            del self._pods[key]
            self._assumed.pop(key, None)
            self._emit_pod(ev.POD_REMOVED, info, was, ev.DELETED)

    def expire_pod(self, pod, now=None):
        """An operator's "expire now": Assumed -> Expired whatever its deadline."""
        key = pod_key(pod)
        with self._lock:
            if key not in self._assumed:
                raise CacheError(f"pod {key} is not assumed, so it cannot be expired")
            self._expire(key, time.time() if now is None else now)

    def cleanup_assumed_pods(self, now=None) -> list:
        """Expire every assumed pod whose binding finished and whose deadline is past."""
        now = time.time() if now is None else now
        with self._lock:
            expired = []
            for key, assumption in list(self._assumed.items()):
                deadline = assumption.deadline
                if assumption.binding_finished and deadline is not None and now > deadline:
                    self._expire(key, now)
                    expired.append(key)
            return expired

    def _expire(self, key, now):
        info = self._pods.pop(key)
        self._unplace(info)
        del self._assumed[key]
        self._expired[key] = True
        if len(self._expired) > _REMEMBERED_EXPIRIES:
            self._expired.popitem(last=False)
        self._emit_pod(ev.POD_EXPIRED, info, ev.ASSUMED, ev.EXPIRED, now)

    def get_pod(self, pod):
        """The cached pod Mapping (lean, a fresh copy); CacheError if absent."""
        key = pod_key(pod)
        with self._lock:
            info = self._pods.get(key)
            if info is None:
                raise CacheError(f"pod {key} does not exist in the scheduler cache")
            return info.pod

    def is_assumed_pod(self, pod) -> bool:
        return pod_key(pod) in self._assumed

    def pod_state(self, pod):
        """"Assumed", "Added", or None for a pod the cache does not hold."""
        key = pod_key(pod)
        with self._lock:
            if key in self._assumed:
                return ev.ASSUMED
            return ev.ADDED if key in self._pods else None

    def assumed_pod_status(self, pod):
        """(binding_finished, deadline) of an assumed pod; None when it is not assumed."""
        key = pod_key(pod)
        with self._lock:
            assumption = self._assumed.get(key)
            if assumption is None:
                return None
            return assumption.binding_finished, assumption.deadline

    def pod_info(self, key):
        """The PodInfo (immutable: key, node_name, resource_version, aggregates) or None."""
        return self._pods.get(key)

    def pod_keys(self) -> list:
        with self._lock:
            return list(self._pods)

    def node_names(self) -> list:
        """Names of the nodes the cache holds a node object for."""
        with self._lock:
            return [name for name, info in self._nodes.items() if info.has_node]

    def list_pods(self, label_selector="", pod_filter=None) -> list:
        """Cached pods (assumed included) matching the selector and the filter."""
        requirements = parse_selector(label_selector)
        with self._lock:
            infos = [info for info in self._pods.values()
                     if not requirements or matches(requirements, info.labels)]
        pods = [info.pod for info in infos]
        return [pod for pod in pods if pod_filter(pod)] if pod_filter else pods

    # --- nodes -----------------------------------------------------------------------------
    def add_node(self, node) -> NodeInfo:
        return self._set_node(node)

    def update_node(self, old, new) -> NodeInfo:
        """Replace the node object; adds a node the cache does not hold yet."""
        return self._set_node(new)

    def _set_node(self, node) -> NodeInfo:
        name = node_name(node)
        if not name:
            raise CacheError("node has no metadata.name")
        try:
            allocatable = node_allocatable(node)
            images = node_images(node)
            frozen = marshal.dumps(_lean_node(node))
        except (ValueError, TypeError, AttributeError) as exc:
            raise CacheError(f"node {name} is malformed: {exc}") from None
        with self._lock:
            info = self._node_info(name)
            existed = info.has_node
            self._images.remove_node(info._s.images)
            if existed:
                self.node_tree.update_node(None, node)
            else:
                self.node_tree.add_node(node)
            info._set_node(frozen, allocatable, self._images.add_node(images))
            self._touch(name, info)
            self._events.emit(ev.NODE_UPDATED if existed else ev.NODE_ADDED, name, name=name,
                              node=name, generation=self._generation)
            return info.clone()

    def remove_node(self, node):
        """Forget a node; one that still has pods stays as a NodeInfo without a node."""
        name = node_name(node)
        with self._lock:
            info = self._nodes.get(name)
            if info is None or not info.has_node:
                raise CacheError(f"node {name!r} is not in the cache, so it cannot be removed")
            self._images.remove_node(info._s.images)
            info._set_node(None, EMPTY, NO_IMAGES)
            self.node_tree.remove_node(node)
            if not self._drop_if_empty(name, info):
                self._touch(name, info)
            self._events.emit(ev.NODE_REMOVED, name, name=name, node=name,
                              generation=self._generation)

    def node_info(self, name):
        """A copy of one node's NodeInfo, or None."""
        with self._lock:
            info = self._nodes.get(name)
            return info.clone() if info is not None else None

    def get_node_name_to_info_map(self) -> dict:
        with self._lock:
            return {name: info.clone() for name, info in self._nodes.items()}

    def update_node_name_to_info_map(self, info_map: dict):
        """Bring a caller's map up to date, copying only entries whose generation changed."""
        with self._lock:
            for name, info in self._nodes.items():
                current = info_map.get(name)
                if current is None or current.generation != info.generation:
                    info_map[name] = info.clone()
            for name in [n for n in info_map if n not in self._nodes]:
                del info_map[name]

    def node_infos_after(self, after: str, limit: int) -> list:
        """Copies of at most `limit` NodeInfos (deleted nodes with pods left included),
        the first by name after `after`: a dump a page at a time, O(nodes log limit)."""
        with self._lock:
            names = heapq.nsmallest(limit, (name for name in self._nodes if name > after))
            return [self._nodes[name].clone() for name in names]

    def dump(self) -> Dump:
        with self._lock:
            return Dump(set(self._assumed), {n: i.clone() for n, i in self._nodes.items()})

    def recently_changed(self, since_generation=0) -> list:
        """Node names changed after `since_generation`, most recent first."""
        with self._lock:
            names = []
            for name in reversed(self._recent):
                if self._nodes[name].generation <= since_generation:
                    break
                names.append(name)
            return names

    # --- snapshot --------------------------------------------------------------------------
    def update_snapshot(self, snapshot):
        """Copy into `snapshot` the nodes changed since its generation; drop deleted ones.

        Raises SnapshotRepairedError (after rebuilding it) when the snapshot was
        found inconsistent with the cache.
        """
        with self._lock:
            before = snapshot.generation
            tree = self.node_tree
            update_all = snapshot._tree_version != tree.version
            affinity_changed = False
            for name in reversed(self._recent):
                info = self._nodes[name]
                if info.generation <= before:
                    break
                if not info.has_node:
                    continue
                existing = snapshot.node_info_map.get(name)
                if existing is None:
                    existing = snapshot.node_info_map[name] = NodeInfo.__new__(NodeInfo)
                    update_all = True
                else:
                    old, new = existing._s, info._s
                    if (bool(old.affinity) != bool(new.affinity)
                            or bool(old.required_anti_affinity) != bool(new.required_anti_affinity)):
                        affinity_changed = True
                    if old.pvc_ref_counts.keys() != new.pvc_ref_counts.keys():
                        snapshot._count_pvcs(old.pvc_ref_counts, -1)
                        snapshot._count_pvcs(new.pvc_ref_counts, 1)
                info._share_into(existing)
            if self._recent:
                snapshot.generation = self._nodes[next(reversed(self._recent))].generation
            if len(snapshot.node_info_map) > tree.num_nodes:
                for name in [n for n in snapshot.node_info_map
                             if n not in self._nodes or not self._nodes[n].has_node]:
                    del snapshot.node_info_map[name]
                update_all = True
            if update_all:
                snapshot._rebuild_lists(tree.list())
                snapshot._tree_version = tree.version
            elif affinity_changed:
                snapshot._rebuild_affinity_lists()
            if snapshot.generation != before:
                self._events.emit(ev.SNAPSHOT_UPDATED, "", generation=snapshot.generation)
            if (len(snapshot.node_info_list) != tree.num_nodes
                    or len(snapshot.node_info_map) != tree.num_nodes):
                problem = (f"snapshot inconsistent: {len(snapshot.node_info_list)} listed and "
                           f"{len(snapshot.node_info_map)} mapped nodes, {tree.num_nodes} in the "
                           f"cache's tree; rebuilt it")
                self._rebuild_snapshot(snapshot)
                raise SnapshotRepairedError(problem)

    def _rebuild_snapshot(self, snapshot):
        snapshot.node_info_map = {n: i.clone() for n, i in self._nodes.items() if i.has_node}
        snapshot._rebuild_lists(self.node_tree.list())
        snapshot._tree_version = self.node_tree.version
        snapshot.generation = self._generation
