"""A cached pod, held lean: what the aggregates and the dashboard need, nothing more.

Everything NodeInfo aggregates is computed once when the pod enters the cache
and kept on the PodInfo, so removing or replacing a pod never parses it again.
Of the pod Mapping only the allow-listed fields below are kept (no
managedFields, env, probes, mounts or status bulk): picked into flat tuples
and frozen as marshal bytes, a fraction of the memory of nested dicts, and
every `.pod` read is an independent copy. What the replicas of a workload carry
alike (its owner, spec and containers: `_workload`) is frozen apart from what
each pod has of its own (timestamps, status: `_frozen`) and shared, as are
the tolerations (nearly every pod carries the same two defaults): frozen into
each pod, the spec and containers were two thirds of a cached pod's bytes.
"""
import marshal
import sys

from .errors import CacheError
from .resource import Resource, pod_requests

# Kept of a pod, besides what PodInfo holds in its own slots (uid, name, namespace,
# resourceVersion, labels, nodeName), which `.pod` puts back.
METADATA_FIELDS = ("generateName", "creationTimestamp", "deletionTimestamp", "ownerReferences")
SPEC_FIELDS = ("schedulerName", "priority", "priorityClassName", "preemptionPolicy",
               "nodeSelector", "affinity", "overhead", "hostNetwork", "volumes")
CONTAINER_FIELDS = ("name", "image", "resources", "ports", "restartPolicy")
STATUS_FIELDS = ("phase", "hostIP", "podIP", "startTime", "qosClass", "nominatedNodeName",
                 "reason", "conditions")
UNSCHEDULED_FIELDS = ("type", "status", "reason", "message", "lastTransitionTime")

_intern = sys.intern


def _claim_volumes(volumes):
    """Only claim-backed volumes matter to the cache (PVC reference counts)."""
    return [v if v.get("persistentVolumeClaim") is not None else {"name": v.get("name"), "ephemeral": {}}
            for v in volumes
            if v.get("persistentVolumeClaim") is not None or v.get("ephemeral") is not None]


def _unscheduled(conditions):
    """Of the conditions only kube-scheduler's last word on a pod it could not place (its
    PodScheduled=False, with the FailedScheduling message): a placed pod keeps none."""
    return [{name: c[name] for name in UNSCHEDULED_FIELDS if c.get(name)}
            for c in conditions or ()
            if c.get("type") == "PodScheduled" and c.get("status") == "False"] or None


def _pick_status(status):
    values = list(map(status.get, STATUS_FIELDS))
    values[-1] = _unscheduled(values[-1])
    return tuple(values)


def _pick_containers(containers):
    return tuple(tuple(map(c.get, CONTAINER_FIELDS)) for c in containers) if containers else None


_NOTHING_OWN = marshal.dumps((None, None, None), 2)   # no timestamps, no status


def _freeze(kind, api_version, metadata, spec, status, with_own=True) -> tuple:
    """(what the pod's workload shares, what the pod has of its own), as marshal bytes;
    without `with_own`, nothing of its own (one shared object)."""
    spec_values = list(map(spec.get, SPEC_FIELDS))
    if spec_values[-1] is not None:
        spec_values[-1] = _claim_volumes(spec_values[-1]) or None
    workload = marshal.dumps((kind, api_version, metadata.get("generateName"),
                              metadata.get("ownerReferences"), tuple(spec_values),
                              _pick_containers(spec.get("containers")),
                              _pick_containers(spec.get("initContainers"))), 2)
    if not with_own:
        return workload, _NOTHING_OWN
    own = marshal.dumps((metadata.get("creationTimestamp"), metadata.get("deletionTimestamp"),
                         _pick_status(status) if status else None), 2)
    return workload, own


def _present(names, values) -> dict:
    return {name: value for name, value in zip(names, values) if value is not None}


def _thaw(workload, own, identity=None, node_name="") -> dict:
    """The lean pod Mapping; `identity` (metadata from the PodInfo's slots) joins what was frozen."""
    kind, api_version, generate_name, owners, spec_values, containers, init_containers = \
        marshal.loads(workload)
    created, deleted, status = marshal.loads(own)
    spec = {"nodeName": node_name} if node_name else {}
    spec.update(_present(SPEC_FIELDS, spec_values))
    if containers is not None:
        spec["containers"] = [_present(CONTAINER_FIELDS, c) for c in containers]
    if init_containers is not None:
        spec["initContainers"] = [_present(CONTAINER_FIELDS, c) for c in init_containers]
    pod = {"kind": kind, "apiVersion": api_version} if kind is not None else {}
    pod["metadata"] = dict(identity or {}, **_present(METADATA_FIELDS,
                                                      (generate_name, created, deleted, owners)))
    pod["spec"] = spec
    if status is not None:
        pod["status"] = _present(STATUS_FIELDS, status)
    return pod


_label_sets = {}  # hash of a label set -> the one dict shared by every pod carrying that set
_label_sets_bound = 50_000  # its size at which the sets no pod holds any more are swept out


def _sweep_label_sets():
    """Drop the sets only the table holds (CPython's reference count: the table's, the
    loop's and getrefcount's own), and double the bound when most are still held, so that
    sweeps stay rare however many sets are alive. Not emptied when full: once more sets
    were alive than it held, pods of one set got a second dict; nor a WeakValueDictionary:
    its reference a set cost the stand-in 63 B a pod (bench/standin_view_memory.py)."""
    global _label_sets_bound
    for digest in list(_label_sets):       # a copy: other threads may add sets meanwhile
        labels = _label_sets.get(digest)
        if labels is not None and sys.getrefcount(labels) <= 3:
            _label_sets.pop(digest, None)
    if len(_label_sets) > _label_sets_bound // 2:
        _label_sets_bound *= 2


def _shared_labels(pairs):
    """A pod's labels (its label pairs: a dict's items or a packed tuple of them) as the
    dict shared by every pod with the same set, never changed: replicas of a workload carry
    the same labels. The table is keyed by the set's hash rather than by a copy of its
    pairs (the copy cost as much as the dict again); a set whose hash another set already
    holds gets a dict of its own."""
    if not pairs:
        return None
    items = frozenset(pairs)
    digest = hash(items)
    shared = _label_sets.get(digest)
    if shared is not None and shared.items() == items:
        return shared
    labels = {_intern(k): _intern(v) for k, v in pairs}
    if shared is None:
        if len(_label_sets) >= _label_sets_bound:
            _sweep_label_sets()
        _label_sets[digest] = labels
    return labels


_frozen_sets = {}  # frozen bytes -> the one object shared by every pod freezing the same
_SHARED_MAX = 50_000  # entries of the tables below; then start afresh, so that those of pods
                      # long gone are not kept forever


def _shared_bytes(frozen):
    """Frozen bytes (a workload's, tolerations) as one object shared by every pod with the
    same."""
    if not frozen:
        return None
    shared = _frozen_sets.get(frozen)
    if shared is None:
        if len(_frozen_sets) >= _SHARED_MAX:
            _frozen_sets.clear()
        shared = _frozen_sets[frozen] = frozen
    return shared


def _host_ports(containers) -> tuple:
    ports = []
    for container in containers:
        for port in container.get("ports") or ():
            host_port = port.get("hostPort")
            if host_port and host_port > 0:
                ports.append((port.get("hostIP") or "", port.get("protocol") or "", host_port))
    return tuple(ports)


def _pvc_keys(namespace, name, volumes) -> tuple:
    keys = []
    for volume in volumes:
        claim = volume.get("persistentVolumeClaim")
        if claim is not None:
            keys.append(f"{namespace}/{claim.get('claimName')}")
        elif volume.get("ephemeral") is not None:
            keys.append(f"{namespace}/{name}-{volume.get('name')}")
    return tuple(keys)


class PodInfo:
    """A pod in the cache. Immutable once built, so NodeInfo copies share it."""

    __slots__ = ("key", "namespace", "name", "node_name", "resource_version", "phase", "priority",
                 "labels", "tolerations",
                 "requested", "non_zero_requested", "host_ports", "has_affinity",
                 "has_required_anti_affinity", "pvc_keys", "_workload", "_frozen")

    @property
    def pod(self) -> dict:
        """The cached pod Mapping (lean), a fresh copy on every read: of a PodInfo made
        without its Mapping (make_pod_info), only its identity and node."""
        identity = {"name": self.name, "namespace": self.namespace, "uid": self.key,
                    "resourceVersion": self.resource_version,
                    "labels": dict(self.labels) if self.labels else None}
        identity = {k: v for k, v in identity.items() if v}
        if self._frozen is None:
            pod = {"metadata": identity, "spec": {"nodeName": self.node_name}
                   if self.node_name else {}}
        else:
            pod = _thaw(self._workload, self._frozen, identity, self.node_name)
        if self.tolerations is not None:
            pod["spec"]["tolerations"] = marshal.loads(self.tolerations)
        return pod

    def __repr__(self):
        return f"PodInfo({self.namespace}/{self.name} uid={self.key} node={self.node_name!r})"


def pod_key(pod) -> str:
    """The cache key of a pod: its uid. CacheError when there is none."""
    try:
        uid = pod["metadata"]["uid"]
    except (KeyError, TypeError):
        uid = None
    if not uid or not isinstance(uid, str):
        raise CacheError("pod has no metadata.uid, so it cannot be cached")
    return uid


def _inter_pod_terms(affinity) -> bool:
    """Whether a pod's affinity has inter-pod terms (podAffinity or podAntiAffinity)."""
    return bool(affinity) and (affinity.get("podAffinity") is not None
                               or affinity.get("podAntiAffinity") is not None)


def make_pod_info(pod, mapping: bool = True) -> PodInfo:
    """Validate and digest a pod; CacheError (and nothing built) for one the cache can't hold.
    `mapping=False`: keep the frozen Mapping only of a pod with inter-pod affinity terms
    (the one part of a placed pod a filter reads: scheduling.podaffinity), and of it only
    what its workload shares (the spec: its terms; not its timestamps and status), for a
    holder of many pods that serves them to nobody (kube-scheduler's stand-in: 0.4 kB a
    pod); the others are not frozen at all."""
    key = pod_key(pod)
    metadata = pod["metadata"]
    try:
        spec = pod.get("spec") or {}
        namespace = _intern(metadata.get("namespace") or "")
        name = metadata.get("name") or ""
        requested, non_zero = pod_requests(spec)
        affinity = spec.get("affinity")
        workload, frozen = (_freeze(pod.get("kind"), pod.get("apiVersion"), metadata, spec,
                                    pod.get("status"), with_own=mapping)
                            if mapping or _inter_pod_terms(affinity) else (None, None))
        labels = metadata.get("labels")
        labels = _shared_labels(labels.items()) if labels else None
        tolerations = spec.get("tolerations")
        tolerations = _shared_bytes(marshal.dumps(tolerations, 2)) if tolerations else None
        containers = spec.get("containers") or ()
        ports = _host_ports(containers)
        volumes = spec.get("volumes")
        pvc_keys = _pvc_keys(namespace, name, volumes) if volumes else ()
        node_name = _intern(spec.get("nodeName") or "")
        phase = _intern((pod.get("status") or {}).get("phase") or "")
        priority = int(spec.get("priority") or 0)
    except (ValueError, TypeError, AttributeError) as exc:
        raise CacheError(f"pod {key} is malformed: {exc}") from None
    info = PodInfo()
    info.key = key
    info.namespace = namespace
    info.name = name
    info.node_name = node_name
    info.resource_version = metadata.get("resourceVersion") or ""
    info.phase = phase
    info.priority = priority
    info.labels = labels
    info.tolerations = tolerations      # shared with pods tolerating the same
    info.requested = requested          # shared with identical pods; never changed
    info.non_zero_requested = non_zero
    info.host_ports = ports
    info.has_affinity = _inter_pod_terms(affinity)
    anti_affinity = affinity.get("podAntiAffinity") if affinity else None
    info.has_required_anti_affinity = bool(
        anti_affinity and anti_affinity.get("requiredDuringSchedulingIgnoredDuringExecution"))
    info.pvc_keys = pvc_keys
    info._workload = _shared_bytes(workload)   # shared with the workload's other replicas
    info._frozen = frozen
    return info


# --- a digest that crosses a process boundary ----------------------------------------------
# The feed digests pods in a process of its own and hands the owner these tuples
# (marshal-able: plain values only), so the owner's process never parses a pod.

def _pack_resource(resource) -> tuple:
    return (resource.milli_cpu, resource.memory, resource.ephemeral_storage,
            resource.allowed_pod_number, tuple(sorted(resource.scalar_resources.items())))


_unpacked_resources = {}  # packed requests -> one shared Resource (never changed)


def _unpack_resource(packed) -> Resource:
    shared = _unpacked_resources.get(packed)
    if shared is None:
        if len(_unpacked_resources) >= _SHARED_MAX:
            _unpacked_resources.clear()
        milli_cpu, memory, ephemeral, pods, scalars = packed
        shared = _unpacked_resources[packed] = Resource(milli_cpu, memory, ephemeral, pods,
                                                        dict(scalars))
    return shared


def pack_pod_info(info: PodInfo) -> tuple:
    """`info` as a tuple of plain values (for marshal), which unpack_pod_info turns back."""
    return (info.key, info.namespace, info.name, info.node_name, info.resource_version,
            info.phase, info.priority, tuple(info.labels.items()) if info.labels else None,
            info.tolerations, _pack_resource(info.requested), _pack_resource(info.non_zero_requested),
            info.host_ports, info.has_affinity, info.has_required_anti_affinity,
            info.pvc_keys, info._workload, info._frozen)


def unpack_pod_info(packed) -> PodInfo:
    """The PodInfo that pack_pod_info packed; equal requests and labels share one object."""
    info = PodInfo()
    (info.key, namespace, info.name, node_name, info.resource_version, phase, info.priority,
     labels, tolerations, requested, non_zero, info.host_ports, info.has_affinity,
     info.has_required_anti_affinity, info.pvc_keys, workload, info._frozen) = packed
    info.tolerations = _shared_bytes(tolerations)
    info._workload = _shared_bytes(workload)
    info.namespace, info.node_name, info.phase = _intern(namespace), _intern(node_name), \
        _intern(phase)
    info.labels = _shared_labels(labels)
    info.requested = _unpack_resource(requested)
    info.non_zero_requested = _unpack_resource(non_zero)
    return info
