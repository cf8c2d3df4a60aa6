"""Resource amounts and what a pod requests, computed as upstream's scheduler does."""
from .quantity import milli_value, value

# What a container without a cpu/memory request counts as in non_zero_requested.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024

_CPU, _MEMORY, _EPHEMERAL, _PODS = "cpu", "memory", "ephemeral-storage", "pods"


def is_scalar_resource_name(name: str) -> bool:
    """Extended, hugepages, prefixed-native and attachable-volume resources."""
    return "/" in name or name.startswith(("hugepages-", "attachable-volumes-"))


class Resource:
    """milli_cpu, memory, ephemeral_storage, allowed_pod_number and scalar resources.

    The cache never changes a Resource in place (arithmetic returns a new one)
    and NodeInfo hands out copies, so a caller may change what it holds.
    """

    __slots__ = ("milli_cpu", "memory", "ephemeral_storage", "allowed_pod_number",
                 "scalar_resources")

    def __init__(self, milli_cpu=0, memory=0, ephemeral_storage=0, allowed_pod_number=0,
                 scalar_resources=None):
        self.milli_cpu = milli_cpu
        self.memory = memory
        self.ephemeral_storage = ephemeral_storage
        self.allowed_pod_number = allowed_pod_number
        self.scalar_resources = dict(scalar_resources) if scalar_resources else {}

    def copy(self) -> "Resource":
        return Resource(self.milli_cpu, self.memory, self.ephemeral_storage,
                        self.allowed_pod_number, self.scalar_resources)

    def _key(self):
        return (self.milli_cpu, self.memory, self.ephemeral_storage, self.allowed_pod_number,
                sorted((k, v) for k, v in self.scalar_resources.items() if v))

    def __eq__(self, other):
        return isinstance(other, Resource) and self._key() == other._key()

    __hash__ = None

    def __repr__(self):
        scalars = f", scalar_resources={self.scalar_resources}" if self.scalar_resources else ""
        return (f"Resource(milli_cpu={self.milli_cpu}, memory={self.memory}, "
                f"ephemeral_storage={self.ephemeral_storage}, "
                f"allowed_pod_number={self.allowed_pod_number}{scalars})")

    def __add__(self, other):
        return _combine(self, other, 1)

    def __sub__(self, other):
        return _combine(self, other, -1)

    def as_dict(self) -> dict:
        """Plain JSON-friendly form, for views and events."""
        return {"milli_cpu": self.milli_cpu, "memory": self.memory,
                "ephemeral_storage": self.ephemeral_storage,
                "allowed_pod_number": self.allowed_pod_number,
                "scalar_resources": dict(self.scalar_resources)}


EMPTY = Resource()


def _combine(a, b, sign):
    scalars = a.scalar_resources
    if b.scalar_resources:
        scalars = dict(scalars)
        for name, amount in b.scalar_resources.items():
            total = scalars.get(name, 0) + sign * amount
            if total:
                scalars[name] = total
            else:
                scalars.pop(name, None)
    result = Resource(a.milli_cpu + sign * b.milli_cpu, a.memory + sign * b.memory,
                      a.ephemeral_storage + sign * b.ephemeral_storage,
                      a.allowed_pod_number + sign * b.allowed_pod_number)
    result.scalar_resources = scalars  # shared: no Resource is changed in place
    return result


_known_amounts = {}


def _amounts(requests) -> dict:
    """A requests/allocatable mapping as integers: cpu in millicores, the rest in units.

    Memoised by content (a cluster repeats a few hundred request sets); the
    result is shared, so callers never change it.
    """
    key = tuple(requests.items())
    try:
        return _known_amounts[key]
    except KeyError:
        pass
    except TypeError:  # unhashable quantities: let parsing reject them
        key = None
    amounts = {name: (milli_value(q) if name == _CPU else value(q)) for name, q in requests.items()}
    if key is not None and len(_known_amounts) < 65536:
        _known_amounts[key] = amounts
    return amounts


def _to_resource(amounts: dict, pods=0) -> Resource:
    return Resource(amounts.get(_CPU, 0), amounts.get(_MEMORY, 0), amounts.get(_EPHEMERAL, 0),
                    pods, {k: v for k, v in amounts.items() if v and is_scalar_resource_name(k)})


def node_allocatable(node) -> Resource:
    """`status.allocatable` of a Node; allowed_pod_number comes from its `pods` entry."""
    amounts = _amounts(((node.get("status") or {}).get("allocatable")) or {})
    return _to_resource(amounts, amounts.get(_PODS, 0))


def _container_requests(container) -> dict:
    resources = container.get("resources")
    requests = resources.get("requests") if resources else None
    return _amounts(requests) if requests else _EMPTY_AMOUNTS


def _add_into(total: dict, amounts: dict):
    for name, amount in amounts.items():
        total[name] = total.get(name, 0) + amount


def _max_into(total: dict, amounts: dict):
    for name, amount in amounts.items():
        if amount > total.get(name, 0):
            total[name] = amount


def _non_zero(amounts: dict) -> dict:
    return {_CPU: amounts.get(_CPU, DEFAULT_MILLI_CPU_REQUEST),
            _MEMORY: amounts.get(_MEMORY, DEFAULT_MEMORY_REQUEST)}


_EMPTY_AMOUNTS = {}


def pod_requests(spec) -> tuple:
    """(requested, non_zero_requested) of a pod spec.

    The sum of the containers, raised to the largest init container where that
    is larger, plus `spec.overhead`. Restartable init containers (sidecars,
    `restartPolicy: Always`) keep running, so they add to the containers' sum
    and to every init container that starts after them. non_zero_requested
    tracks only cpu and memory, counting a missing request as 100m / 200Mi.
    Memoised by the spec's requests (replicas repeat them), init containers and
    overhead included: each pod of a workload with sidecars got Resources of its
    own, 120 B a pod in kube-scheduler's stand-in (bench/standin_view_memory.py).
    """
    containers, init_containers = spec.get("containers") or (), spec.get("initContainers")
    overhead = spec.get("overhead")
    key = (tuple(map(_requests_key, containers)),
           tuple((_requests_key(c), c.get("restartPolicy")) for c in init_containers or ()),
           tuple(overhead.items()) if overhead else ())
    known = _known_pods.get(key)
    if known is None:
        known = _sum_containers(containers, init_containers, overhead)
        if len(_known_pods) < 65536:
            _known_pods[key] = known
    return known


def _requests_key(container):
    resources = container.get("resources")
    requests = resources.get("requests") if resources else None
    return tuple(requests.items()) if requests else ()


_known_pods = {}  # the spec's request sets (see pod_requests) -> (requested, non_zero_requested)


def _sum_containers(containers, init_containers=None, overhead=None) -> tuple:
    total, non_zero = {}, {}
    for container in containers:
        requests = _container_requests(container)
        _add_into(total, requests)
        _add_into(non_zero, _non_zero(requests))
    if init_containers:
        sidecars, sidecars_nz, init_peak, init_peak_nz = {}, {}, {}, {}
        for container in init_containers:
            requests = _container_requests(container)
            requests_nz = _non_zero(requests)
            if container.get("restartPolicy") == "Always":
                for acc, add in ((total, requests), (sidecars, requests),
                                 (non_zero, requests_nz), (sidecars_nz, requests_nz)):
                    _add_into(acc, add)
                effective, effective_nz = sidecars, sidecars_nz
            else:
                effective, effective_nz = dict(requests), requests_nz
                _add_into(effective, sidecars)
                _add_into(effective_nz, sidecars_nz)
            _max_into(init_peak, effective)
            _max_into(init_peak_nz, effective_nz)
        _max_into(total, init_peak)
        _max_into(non_zero, init_peak_nz)
    if overhead:
        overhead_amounts = _amounts(overhead)
        _add_into(total, overhead_amounts)
        _add_into(non_zero, {k: v for k, v in overhead_amounts.items() if k in (_CPU, _MEMORY)})
    return _to_resource(total), _to_resource(non_zero)
