"""kube-scheduler's scheduling queue, as far as its stand-in needs one: which pending pods
to attempt now, so that one pod's failure never holds up another.

What the captures show (../shared/k8s-wire/extender/README.md, "Retry timing"), per pod:

- after an error (a filter or bind error of any kind, a filter naming a node it was not
  sent) the pod backs off 1, 2, 4, 8, then 10 s (the cap) from the failure, doubling
  with every attempt it has had (05a: failures at :22.11, :24.00, :27.00, :32.00 retried
  at :24, :27, :32, :41; kube-scheduler counts attempts, not errors);
- an unschedulable pod (no node left after the filters, the extender's included;
  preemption that did not happen or failed) waits for a cluster event: a pod deleted
  or a node changed (04b: an unrelated pod's deletion brought the next attempt at once;
  03a: each victim's deletion), or, rejected by the extender, any change at all,
  its own update included (02 rej-2: kube-scheduler's own status write brought exactly
  one more attempt), or the flush of pods unschedulable for 5 minutes (07: retried
  5 min 15 s later). Woken, it serves what is left of its backoff while other pods
  are due, and none when nothing else is (02: the second attempt came 5 ms after the
  first; kube-scheduler pops its backoff queue when the active queue is empty, never
  for a pod that failed with an error): under churn every deletion wakes them, and
  the same few unschedulable pods, oldest first, took every attempt of every period.
  Approximated: kube-scheduler asks each rejecting plugin which events matter; here
  own-filter rejections wake on any pod deletion or node change;
- the rest go highest priority first, then the earliest queued (kube-scheduler's
  PrioritySort): a pod when it was created, a pod that failed an attempt when it failed
  (kube-scheduler refreshes a pod's queue timestamp when it comes back), so the same old
  unschedulable pods do not come before every new one at each wake-up.

Pending pods come as the stand-in's view keeps them (`standin_view.PendingPod`: uid,
resourceVersion and queue order, the pod itself frozen); a pod attempted, whole. Time is
passed in (seconds); the state lives as long as the worker process.
"""
import heapq
from dataclasses import dataclass
from datetime import datetime, timezone

INITIAL_BACKOFF = 1.0
MAX_BACKOFF = 10.0
UNSCHEDULABLE_FLUSH = 300.0


def backoff(attempts: int) -> float:
    """Seconds after a failed attempt before the next (kube-scheduler's defaults)."""
    return min(INITIAL_BACKOFF * 2 ** max(attempts - 1, 0), MAX_BACKOFF)


@dataclass
class _Waiting:
    attempts: int = 0
    failed_at: float = 0.0
    parked_at: float | None = None    # unschedulable since; None: backing off after an error
    changes: int = 0                  # the cluster's change count when parked
    version: str = ""                 # the pod's resourceVersion when parked
    any_change: bool = False          # rejected by the extender: its own update wakes it
    queued: str = ""                  # when it came back to the queue, as creation times are


READY, BACKING_OFF = "ready", "backing off"


def timestamp_text(now: float) -> str:
    """An epoch time as Kubernetes writes timestamps (creationTimestamp, a condition's
    lastTransitionTime): RFC 3339 in whole seconds, UTC."""
    return datetime.fromtimestamp(int(now), timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _version(pod) -> str:
    return pod["metadata"].get("resourceVersion") or ""


class SchedulingQueue:
    def __init__(self):
        self._waiting = {}    # uid -> _Waiting, for pods that failed an attempt

    def due(self, pending, changes: int, now: float, limit: int | None = None) -> list:
        """The first `limit` (all: None) of the pending pods (PendingPods) to attempt now,
        in kube-scheduler's order. `changes`: the cluster's change count
        (ClusterView.changes). Pods no longer pending are forgotten."""
        waiting = self._waiting
        pending = list(pending)
        uids = {p.uid for p in pending}
        for uid in [u for u in waiting if u not in uids]:
            del waiting[uid]
        ready, backing_off = [], []
        for p in pending:
            state = self._state(p, changes, now)
            if state is READY:
                ready.append(p)
            elif state is BACKING_OFF:
                backing_off.append(p)
        due = ready or backing_off
        if limit is not None and limit < len(due):
            return heapq.nsmallest(limit, due, key=self._order)
        return sorted(due, key=self._order)

    def _order(self, pending) -> tuple:
        """The pod's queue_key with its creation time replaced by when it failed, if it did."""
        entry = self._waiting.get(pending.uid)
        if entry is None:
            return pending.order
        priority, _, namespace, name = pending.order
        return priority, entry.queued, namespace, name

    def _state(self, pending, changes, now):
        """READY, BACKING_OFF (woken, its backoff not yet served) or None (not due)."""
        entry = self._waiting.get(pending.uid)
        if entry is None:
            return READY
        backed_off = now >= entry.failed_at + backoff(entry.attempts)
        if entry.parked_at is None:
            return READY if backed_off else None
        woken = (changes > entry.changes or now - entry.parked_at >= UNSCHEDULABLE_FLUSH
                 or (entry.any_change and pending.version != entry.version))
        if not woken:
            return None
        return READY if backed_off else BACKING_OFF

    def failed(self, pod, now: float) -> float:
        """An error: the pod backs off; returns the seconds it waits."""
        entry = self._entry(pod, now)
        entry.parked_at = None
        return backoff(entry.attempts)

    def unschedulable(self, pod, now: float, changes: int, by_extender: bool = False) -> None:
        """No node for the pod: it waits for a cluster change (or the flush)."""
        entry = self._entry(pod, now)
        entry.parked_at, entry.changes = now, changes
        entry.version, entry.any_change = _version(pod), by_extender

    def bound(self, pod) -> None:
        self._waiting.pop(pod["metadata"]["uid"], None)

    def _entry(self, pod, now) -> _Waiting:
        entry = self._waiting.setdefault(pod["metadata"]["uid"], _Waiting())
        entry.attempts += 1
        entry.failed_at = now
        entry.queued = timestamp_text(now)
        return entry
