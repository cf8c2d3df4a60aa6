"""A pending pod digested once per schedule call: what every filter needs, parsed once."""
from schedcache.hostports import sanitize
from schedcache.resource import pod_requests

from . import nodeaffinity
from .taints import pod_tolerations


def _host_ports(spec) -> tuple:
    ports = []
    for container in spec.get("containers") or ():
        for port in container.get("ports") or ():
            host_port = port.get("hostPort")
            if host_port and host_port > 0:
                ip, protocol = sanitize(port.get("hostIP") or "", port.get("protocol") or "")
                ports.append((ip, protocol, host_port))
    return tuple(ports)


class PodView:
    """The pod as the filters see it. `taint_verdicts` memoises the taint filter per taint set."""

    __slots__ = ("pod", "key", "namespace", "name", "node_name", "priority", "preemption_policy",
                 "requested", "milli_cpu", "memory", "ephemeral_storage", "scalars",
                 "has_requests", "host_ports", "node_matcher", "tolerations", "taint_verdicts")

    def __init__(self, pod, ignored_resources: frozenset = frozenset()):
        """`ignored_resources`: extended resources the fit filter does not check, as
        kube-scheduler's NodeResourcesFitArgs.ignoredResources (an extender checks them)."""
        metadata = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        self.pod = pod
        self.namespace = metadata.get("namespace") or ""
        self.name = metadata.get("name") or ""
        self.key = metadata.get("uid") or f"{self.namespace}/{self.name}"
        self.node_name = spec.get("nodeName") or ""
        self.priority = int(spec.get("priority") or 0)
        self.preemption_policy = spec.get("preemptionPolicy") or "PreemptLowerPriority"
        requested, _ = pod_requests(spec)
        self.requested = requested
        self.milli_cpu = requested.milli_cpu
        self.memory = requested.memory
        self.ephemeral_storage = requested.ephemeral_storage
        self.scalars = tuple((n, q) for n, q in sorted(requested.scalar_resources.items())
                             if q > 0 and n not in ignored_resources)
        self.has_requests = bool(self.milli_cpu or self.memory or self.ephemeral_storage
                                 or self.scalars)
        self.host_ports = _host_ports(spec)
        self.node_matcher = nodeaffinity.compile_pod(spec)
        self.tolerations = pod_tolerations(spec)
        self.taint_verdicts = {}

    @property
    def may_preempt(self) -> bool:
        return self.preemption_policy != "Never"

    def __repr__(self):
        return f"PodView({self.namespace}/{self.name} priority={self.priority})"
