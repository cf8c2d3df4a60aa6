"""What an action on a pod will change on its node, shown before it is done.

Why: an operator confirms an action on a page that says what it will do. Forgetting
or expiring takes the pod out of its node's NodeInfo, so the node's requested and
non-zero requested cpu and memory drop by the pod's requests and its pod count
by one; assuming a pending pod on a node adds them. Computed from the read model (NodeRecord, PodRecord), not the owner, so
the preview costs no command and works while the owner is busy; the owner's
answer to the action itself carries the real before and after.

The read model keeps a pod's summed requests, not its containers', so a
non-zero request counts the pod's sum as one container would: 100m cpu and
200 MiB memory when the sum is zero (schedcache's defaults).
"""
from dataclasses import dataclass

from schedcache.resource import DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST

from dashboard.models import NodeRecord, PodRecord
from dashboard.readmodel.read_model import cpu_text, memory_text


@dataclass(frozen=True)
class Aggregates:
    """A node's pod-derived aggregates, in the units the page prints."""
    pods: int
    milli_cpu: int
    memory: int
    non_zero_milli_cpu: int
    non_zero_memory: int

    def plus(self, pod: PodRecord) -> "Aggregates":
        cpu, memory = pod.milli_cpu or 0, pod.memory or 0
        return Aggregates(
            pods=self.pods + 1, milli_cpu=self.milli_cpu + cpu, memory=self.memory + memory,
            non_zero_milli_cpu=self.non_zero_milli_cpu + (cpu or DEFAULT_MILLI_CPU_REQUEST),
            non_zero_memory=self.non_zero_memory + (memory or DEFAULT_MEMORY_REQUEST))

    def minus(self, pod: PodRecord) -> "Aggregates":
        """Without `pod` (never below zero: a read model that lags must not print -1 pods)."""
        cpu, memory = pod.milli_cpu or 0, pod.memory or 0
        return Aggregates(
            pods=max(0, self.pods - 1),
            milli_cpu=max(0, self.milli_cpu - cpu),
            memory=max(0, self.memory - memory),
            non_zero_milli_cpu=max(0, self.non_zero_milli_cpu - (cpu or DEFAULT_MILLI_CPU_REQUEST)),
            non_zero_memory=max(0, self.non_zero_memory - (memory or DEFAULT_MEMORY_REQUEST)))


def node_aggregates(node: NodeRecord) -> Aggregates:
    requested, non_zero = node.requested or {}, node.non_zero_requested or {}
    return Aggregates(pods=node.pods, milli_cpu=int(requested.get("milli_cpu") or 0),
                      memory=int(requested.get("memory") or 0),
                      non_zero_milli_cpu=int(non_zero.get("milli_cpu") or 0),
                      non_zero_memory=int(non_zero.get("memory") or 0))


@dataclass(frozen=True)
class Change:
    """One line of the preview: what, before, after, in words."""
    label: str
    before: str
    after: str

    @property
    def changed(self) -> bool:
        return self.before != self.after


@dataclass(frozen=True)
class Preview:
    node: str
    node_known: bool        # False: the pod's node has no NodeRecord (nothing to show)
    before: Aggregates | None
    after: Aggregates | None

    @property
    def changes(self) -> list[Change]:
        if self.before is None:
            return []
        b, a = self.before, self.after
        return [Change("Pods", str(b.pods), str(a.pods)),
                Change("Requested CPU", _cpu(b.milli_cpu), _cpu(a.milli_cpu)),
                Change("Requested memory", _memory(b.memory), _memory(a.memory)),
                Change("Non-zero requested CPU", _cpu(b.non_zero_milli_cpu),
                       _cpu(a.non_zero_milli_cpu)),
                Change("Non-zero requested memory", _memory(b.non_zero_memory),
                       _memory(a.non_zero_memory))]


def _cpu(milli: int) -> str:
    return cpu_text(milli) or "0 cores"


def _memory(amount: int) -> str:
    return memory_text(amount) or "0 MiB"


def preview(pod: PodRecord, onto: str = "") -> Preview:
    """The pod's node before and after the pod leaves it; with `onto`, that node before
    and after the pod is assumed on it."""
    name = onto or pod.node
    node = NodeRecord.objects.filter(name=name).first() if name else None
    if node is None:
        return Preview(name, False, None, None)
    before = node_aggregates(node)
    return Preview(name, True, before, before.plus(pod) if onto else before.minus(pod))
