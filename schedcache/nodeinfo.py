"""NodeInfo: a node and the aggregate of the pods the cache places on it.

Copies are handed out constantly (every snapshot, every dump), so a copy shares
the cache's state and the cache copies that state only when it next changes
the node (copy on write). Everything reachable from a copy is immutable or a
fresh object, so a copy never changes after it is made and never changes the
cache.
"""
import marshal

from .hostports import HostPortInfo
from .images import NO_IMAGES
from .resource import EMPTY


class _State:
    __slots__ = ("name", "frozen_node", "pods", "requested", "non_zero_requested", "allocatable",
                 "used_ports", "affinity", "required_anti_affinity", "pvc_ref_counts", "images",
                 "generation", "shared")

    def copy(self) -> "_State":
        clone = _State()
        clone.name = self.name
        clone.frozen_node = self.frozen_node
        clone.pods = dict(self.pods)
        clone.requested = self.requested
        clone.non_zero_requested = self.non_zero_requested
        clone.allocatable = self.allocatable
        clone.used_ports = self.used_ports.copy()
        clone.affinity = dict(self.affinity)
        clone.required_anti_affinity = dict(self.required_anti_affinity)
        clone.pvc_ref_counts = dict(self.pvc_ref_counts)
        clone.images = self.images
        clone.generation = self.generation
        clone.shared = False
        return clone


def _empty_state(name) -> _State:
    state = _State()
    state.name = name
    state.frozen_node = None
    state.pods = {}
    state.requested = EMPTY
    state.non_zero_requested = EMPTY
    state.allocatable = EMPTY
    state.used_ports = HostPortInfo()
    state.affinity = {}
    state.required_anti_affinity = {}
    state.pvc_ref_counts = {}
    state.images = NO_IMAGES
    state.generation = 0
    state.shared = False
    return state


class NodeInfo:
    """Aggregated information about one node (see the contract for each field)."""

    __slots__ = ("_s", "_image_summaries")

    def __init__(self, name=""):
        self._s = _empty_state(name)
        self._image_summaries = None  # on a copy: its images' summaries when it was made, in
                                      # their states' order; None on the cache's own

    # --- reading -------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._s.name

    @property
    def node(self):
        """The Node Mapping (lean: no managedFields), or None for a node deleted with pods left.
        Its `status.images` were frozen apart (schedcache.images): put back in their place."""
        frozen = self._s.frozen_node
        if frozen is None:
            return None
        node = marshal.loads(frozen)
        entries = self._s.images.entries
        if entries:
            node["status"]["images"] = [entry.thaw() for entry in entries]
        return node

    @property
    def has_node(self) -> bool:
        return self._s.frozen_node is not None

    @property
    def pods(self) -> list:
        return list(self._s.pods.values())

    @property
    def pod_keys(self):
        return self._s.pods.keys()

    @property
    def requested(self):
        return self._s.requested.copy()

    @property
    def non_zero_requested(self):
        return self._s.non_zero_requested.copy()

    @property
    def allocatable(self):
        return self._s.allocatable.copy()

    @property
    def used_ports(self) -> HostPortInfo:
        return self._s.used_ports.copy()

    def check_host_port_conflict(self, ip, protocol, port) -> bool:
        """used_ports.check_conflict without copying the port table."""
        return self._s.used_ports.check_conflict(ip, protocol, port)

    @property
    def pods_with_affinity(self) -> list:
        return list(self._s.affinity.values())

    @property
    def pods_with_required_anti_affinity(self) -> list:
        return list(self._s.required_anti_affinity.values())

    @property
    def pvc_ref_counts(self) -> dict:
        return dict(self._s.pvc_ref_counts)

    @property
    def image_states(self) -> dict:
        states = self._s.images.states
        if self._image_summaries is not None:
            return {state.name: summary for state, summary in zip(states, self._image_summaries)}
        return {state.name: state.summary for state in states}

    @property
    def generation(self) -> int:
        return self._s.generation

    def __repr__(self):
        return (f"NodeInfo({self.name!r}, pods={len(self._s.pods)}, requested={self.requested}, "
                f"generation={self.generation})")

    # --- copying -------------------------------------------------------------------------
    def clone(self) -> "NodeInfo":
        """An independent copy; O(images on the node), whatever its pod count."""
        copy = NodeInfo.__new__(NodeInfo)
        self._share_into(copy)
        return copy

    def _share_into(self, target: "NodeInfo"):
        state = self._s
        state.shared = True
        target._s = state
        target._image_summaries = (tuple(s.summary for s in state.images.states)
                                   if self._image_summaries is None else self._image_summaries)

    def _writable(self) -> _State:
        if self._s.shared:
            self._s = self._s.copy()
        return self._s

    # --- changing (the cache calls these under its lock, then sets the generation) -------
    def _add_pod(self, info):
        s = self._writable()
        s.pods[info.key] = info
        s.requested = s.requested + info.requested
        s.non_zero_requested = s.non_zero_requested + info.non_zero_requested
        for ip, protocol, port in info.host_ports:
            s.used_ports.add(ip, protocol, port)
        if info.has_affinity:
            s.affinity[info.key] = info
        if info.has_required_anti_affinity:
            s.required_anti_affinity[info.key] = info
        for key in info.pvc_keys:
            s.pvc_ref_counts[key] = s.pvc_ref_counts.get(key, 0) + 1

    def _remove_pod(self, info):
        s = self._writable()
        del s.pods[info.key]
        s.requested = s.requested - info.requested
        s.non_zero_requested = s.non_zero_requested - info.non_zero_requested
        for ip, protocol, port in info.host_ports:
            s.used_ports.remove(ip, protocol, port)
        s.affinity.pop(info.key, None)
        s.required_anti_affinity.pop(info.key, None)
        for key in info.pvc_keys:
            count = s.pvc_ref_counts.get(key, 0) - 1
            if count > 0:
                s.pvc_ref_counts[key] = count
            else:
                s.pvc_ref_counts.pop(key, None)

    def _set_node(self, frozen_node, allocatable, images):
        s = self._writable()
        s.frozen_node = frozen_node
        s.allocatable = allocatable
        s.images = images

    def _set_generation(self, generation):
        self._writable().generation = generation

    def aggregates(self) -> dict:
        """Everything derived from the pods, in plain comparable form."""
        s = self._s
        return {"requested": s.requested, "non_zero_requested": s.non_zero_requested,
                "used_ports": s.used_ports.entries(), "pvc_ref_counts": dict(s.pvc_ref_counts),
                "pods_with_affinity": sorted(s.affinity),
                "pods_with_required_anti_affinity": sorted(s.required_anti_affinity)}

    def recomputed_aggregates(self) -> dict:
        """The aggregates rebuilt from scratch from this node's pods (for consistency checks)."""
        fresh = NodeInfo(self.name)
        for info in self._s.pods.values():
            fresh._add_pod(info)
        return fresh.aggregates()


__all__ = ["NodeInfo", "ImageStateSummary"]
