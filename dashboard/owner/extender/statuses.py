"""PodScheduleStatuses: what the extender decided for each pod (HiveD's, in Python).

    uid -> PodScheduleStatus(state, bind attempts, the schedule result)

States and the transitions allowed (HiveD's; anything else raises
TransitionError and changes nothing):

    Unknown    -> Waiting, Bound          (Unknown = not tracked: no entry)
    Waiting    -> Waiting, Preempting, Binding
    Preempting -> Preempting, Binding, Waiting
    Binding    -> Bound                   (placement decided: never changes)
    Bound      -> (final)
    any        -> Unknown                 (`remove`: deleted, forgotten, expired)

Waiting -> Waiting and Preempting -> Preempting replace the schedule result
(new reasons, new victims). A pod's first decision is Unknown -> Waiting ->
the decision, as HiveD's informer makes every pending pod Waiting first.

`rebuild(pods)` restores statuses after a restart from the pods themselves:
the bind path writes the BIND_INFO_ANNOTATION (JSON `{"node": ...}`) on the
pod it binds; a bound pod becomes Bound, an annotated unbound pod Binding.
Restoring is not a transition and bypasses the table above.

Pure Python: no Django, no I/O.
"""
import threading
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Iterable, Mapping, Optional

from dashboard.wire.extender import BINDING, BOUND, PREEMPTING, STATES, WAITING, annotated_node

UNKNOWN = "Unknown"
ALLOCATED = frozenset((BINDING, BOUND))

ALLOWED = MappingProxyType({
    UNKNOWN: frozenset((WAITING, BOUND)),
    WAITING: frozenset((WAITING, PREEMPTING, BINDING)),
    PREEMPTING: frozenset((PREEMPTING, BINDING, WAITING)),
    BINDING: frozenset((BOUND,)),
    BOUND: frozenset(),
})

class TransitionError(ValueError):
    """A status change HiveD's state machine does not allow; nothing was changed."""


@dataclass(frozen=True)
class Victim:
    """A pod to preempt (MetaPod's UID, plus what a person reading the status needs)."""
    uid: str
    namespace: str = ""
    name: str = ""
    priority: int = 0


@dataclass
class PodScheduleStatus:
    uid: str
    namespace: str
    name: str
    state: str
    node: str = ""                  # Binding/Bound: the bind node; Preempting: the chosen node
    bind_attempts: int = 0          # bind calls, and filter calls seen again, while Binding
                                    # (HiveD's PodBindAttempts)
    bind_requested: bool = False    # schedule_bind was called for this placement
    wait_reasons: Mapping[str, str] = field(default_factory=dict)   # node -> why not
    victims: Mapping[str, tuple] = field(default_factory=dict)      # node -> (Victim, ...)
    pod: Optional[dict] = None      # Binding: the placed pod (spec.nodeName set), as assumed

    def as_dict(self) -> dict:
        """Plain data (JSON-ready), for the owner's replies and for comparisons."""
        return dict(self.summary(), wait_reasons=dict(self.wait_reasons))

    def summary(self) -> dict:
        """as_dict without the reason of every node (thousands on a big cluster): each
        distinct reason with how many nodes gave it, as kube-scheduler's own
        "0/5000 nodes are available: 4990 Insufficient cpu, ..." counts them."""
        return {"uid": self.uid, "namespace": self.namespace, "name": self.name,
                "state": self.state, "node": self.node, "bind_attempts": self.bind_attempts,
                "bind_requested": self.bind_requested,
                "reasons": reason_counts(self.wait_reasons),
                "victims": {n: [v.__dict__.copy() for v in vs] for n, vs in self.victims.items()}}


def reason_counts(wait_reasons: Mapping[str, str]) -> dict:
    """reason -> how many nodes gave it, most frequent first."""
    counts = {}
    for reason in wait_reasons.values():
        counts[reason] = counts.get(reason, 0) + 1
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


class PodScheduleStatuses:
    """uid -> PodScheduleStatus, with HiveD's transitions enforced. Thread safe."""

    def __init__(self):
        self._lock = threading.RLock()
        self._statuses: dict[str, PodScheduleStatus] = {}
        self.version = 0   # grows with every change: live pages redraw when it moved

    # --- reading ----------------------------------------------------------------------------
    def get(self, uid) -> Optional[PodScheduleStatus]:
        return self._statuses.get(uid)

    def state(self, uid) -> str:
        status = self._statuses.get(uid)
        return status.state if status is not None else UNKNOWN

    def __len__(self):
        return len(self._statuses)

    def __contains__(self, uid):
        return uid in self._statuses

    def dump(self) -> dict:
        """uid -> status as plain data (a deep copy)."""
        with self._lock:
            return {uid: s.as_dict() for uid, s in self._statuses.items()}

    def counts(self) -> dict:
        with self._lock:
            counts = dict.fromkeys(STATES, 0)
            for status in self._statuses.values():
                counts[status.state] += 1
            return counts

    def page(self, state: Optional[str] = None, offset: int = 0, limit: int = 50) -> tuple:
        """(how many match, the matching statuses from `offset`, at most `limit`), by
        namespace then name. Sorts every match: fine for the tens of thousands of pods
        an extender tracks at once, called for a page view, not per scheduling call."""
        with self._lock:
            matching = [s for s in self._statuses.values() if state is None or s.state == state]
        matching.sort(key=lambda s: (s.namespace, s.name, s.uid))
        return len(matching), matching[offset:offset + limit]

    def find(self, namespace: str, name: str) -> Optional[PodScheduleStatus]:
        """The status of the pod named `namespace/name` (a scan: for one person's request)."""
        with self._lock:
            for status in self._statuses.values():
                if status.name == name and status.namespace == namespace:
                    return status
        return None

    # --- transitions --------------------------------------------------------------------------
    def check(self, uid, to_state, *, label="") -> None:
        """Raise TransitionError unless the pod may move to `to_state` now."""
        from_state = self.state(uid)
        if to_state not in ALLOWED[from_state]:
            allowed = ", ".join(sorted(ALLOWED[from_state])) or "nothing (final state)"
            raise TransitionError(
                f"pod {label or uid}: {from_state} -> {to_state} is not allowed "
                f"({from_state} may go to {allowed})")

    def _label(self, uid, namespace, name):
        status = self._statuses.get(uid)
        if status is not None:
            namespace, name = status.namespace, status.name
        return f"{namespace}/{name} ({uid})" if name else uid

    def _set(self, uid, namespace, name, to_state, **fields) -> PodScheduleStatus:
        with self._lock:
            self.check(uid, to_state, label=self._label(uid, namespace, name))
            previous = self._statuses.get(uid)
            if previous is not None:
                namespace = namespace or previous.namespace
                name = name or previous.name
            status = PodScheduleStatus(uid=uid, namespace=namespace, name=name, state=to_state,
                                       **fields)
            self._statuses[uid] = status
            self.version += 1
            return status

    def wait(self, uid, namespace="", name="", reasons: Mapping[str, str] = ()):
        """-> Waiting, with the reason each node was refused."""
        return self._set(uid, namespace, name, WAITING, wait_reasons=dict(reasons or {}))

    def preempt(self, uid, namespace="", name="", *, node: str,
                victims: Mapping[str, Iterable[Victim]]):
        """-> Preempting: `victims` (node -> Victims) must go for the pod to fit on `node`."""
        frozen = {n: tuple(vs) for n, vs in dict(victims).items()}
        return self._set(uid, namespace, name, PREEMPTING, node=node, victims=frozen)

    def binding(self, uid, namespace="", name="", *, node: str, pod: Optional[dict] = None):
        """-> Binding on `node` (the placement is final from now on)."""
        if not node:
            raise TransitionError(f"pod {self._label(uid, namespace, name)}: Binding needs a node")
        return self._set(uid, namespace, name, BINDING, node=node, pod=pod)

    def bound(self, uid, namespace="", name="", *, node: str = ""):
        """-> Bound. From Binding the node and the bind attempts are kept (a different
        `node` is refused)."""
        with self._lock:
            previous = self._statuses.get(uid)
            attempts = 0
            if previous is not None and previous.state == BINDING:
                if node and node != previous.node:
                    raise TransitionError(
                        f"pod {self._label(uid, namespace, name)} is Binding on "
                        f"{previous.node!r}, it cannot become Bound on {node!r}")
                node, attempts = previous.node, previous.bind_attempts
            return self._set(uid, namespace, name, BOUND, node=node, bind_attempts=attempts)

    def remove(self, uid) -> Optional[PodScheduleStatus]:
        """-> Unknown (always allowed); returns the status dropped, if any."""
        with self._lock:
            self.version += 1
            return self._statuses.pop(uid, None)

    def count_bind_attempt(self, uid) -> int:
        """One more bind or filter call for a Binding pod; returns the attempts so far."""
        with self._lock:
            status = self._statuses.get(uid)
            if status is None or status.state != BINDING:
                raise TransitionError(f"pod {self._label(uid, '', '')} is {self.state(uid)}, "
                                      f"only a Binding pod counts bind attempts")
            status.bind_attempts += 1
            self.version += 1
            return status.bind_attempts

    def mark_bind_requested(self, uid) -> None:
        with self._lock:
            status = self._statuses.get(uid)
            if status is None or status.state != BINDING:
                raise TransitionError(f"pod {self._label(uid, '', '')} is {self.state(uid)}, "
                                      f"only a Binding pod can be sent to bind")
            status.bind_requested = True
            self.version += 1

    # --- restart ------------------------------------------------------------------------------
    def rebuild(self, pods: Iterable[Mapping]) -> dict:
        """Replace every status with what the pods' bind-info annotations say.

        A pod bound (spec.nodeName set) with the annotation -> Bound on its node; an
        unbound pod with the annotation -> Binding on the annotated node (with the
        placed pod, nodeName set, to assume in the cache). Pods without the
        annotation, or without a uid, are not tracked. Returns the state counts.
        """
        restored = {}
        for pod in pods:
            node = annotated_node(pod)
            metadata = pod.get("metadata") or {}
            uid = metadata.get("uid")
            if node is None or not uid:
                continue
            namespace, name = metadata.get("namespace") or "", metadata.get("name") or ""
            bound_on = ((pod.get("spec") or {}).get("nodeName")) or ""
            if bound_on:
                restored[uid] = PodScheduleStatus(uid, namespace, name, BOUND, node=bound_on)
            else:
                placed = dict(pod, spec=dict(pod.get("spec") or {}, nodeName=node))
                restored[uid] = PodScheduleStatus(uid, namespace, name, BINDING, node=node,
                                                  pod=placed)
        with self._lock:
            self._statuses = restored
            self.version += 1
        return self.counts()
