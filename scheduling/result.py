"""What one scheduling decision returns: bind, preempt or wait (HiveD's PodScheduleResult).

Exactly one of the three is set, as HiveD requires: bind when there is free
room on a suggested node, preempt when room can be made by evicting lower
priority pods, wait otherwise (with the reason each node was refused).
"""
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping, Optional


def _frozen_mapping(value) -> Mapping:
    return MappingProxyType(dict(value or {}))


@dataclass(frozen=True)
class BindInfo:
    """Bind the pod on `node` (a node of the cache's snapshot, among the suggested ones)."""
    node: str


@dataclass(frozen=True)
class PreemptInfo:
    """Evict `victims` (node name -> PodInfo objects, schedcache's) so the pod fits on `node`."""
    node: str
    victims: Mapping[str, tuple] = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "victims",
                           _frozen_mapping({n: tuple(v) for n, v in dict(self.victims).items()}))


@dataclass(frozen=True)
class WaitInfo:
    """Wait for room: node name -> why that node cannot take the pod."""
    failed_node_reasons: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "failed_node_reasons", _frozen_mapping(self.failed_node_reasons))


@dataclass(frozen=True)
class ScheduleResult:
    bind_info: Optional[BindInfo] = None
    preempt_info: Optional[PreemptInfo] = None
    wait_info: Optional[WaitInfo] = None

    def __post_init__(self):
        chosen = sum(x is not None for x in (self.bind_info, self.preempt_info, self.wait_info))
        if chosen > 1:
            raise ValueError("a ScheduleResult sets at most one of bind, preempt and wait")

    @classmethod
    def bind(cls, node: str) -> "ScheduleResult":
        return cls(bind_info=BindInfo(node))

    @classmethod
    def preempt(cls, node: str, victims: Mapping[str, tuple]) -> "ScheduleResult":
        return cls(preempt_info=PreemptInfo(node, victims))

    @classmethod
    def wait(cls, reasons: Mapping[str, str]) -> "ScheduleResult":
        return cls(wait_info=WaitInfo(reasons))

    @property
    def kind(self) -> str:
        """"bind", "preempt" or "wait" (an empty result counts as wait)."""
        if self.bind_info is not None:
            return "bind"
        if self.preempt_info is not None:
            return "preempt"
        return "wait"
