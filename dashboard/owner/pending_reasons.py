"""The pending pods counted by their first reason, for `schedview_pending_pods{reason}`.

Why a sweep in slices: a diagnosis passes over every node (milliseconds at 5,000 nodes,
bench/diagnosis_bench.py), and thousands of pods pend at once in a busy cluster. So the
owner re-counts every PERIOD seconds, spending at most BUDGET seconds of its thread per
flush, and pods with the same scheduling constraints share one diagnosis per sweep (a
workload's replicas differ only in name). Until the first sweep ends nothing is counted.
The feed comes first: while it is more than BEHIND seconds behind, the sweep waits (at
1,000 events a second a sweep of 50,000 pending pods took more of the owner's thread than
applying the feed did, and the feed never caught up: issue 26). kube-scheduler comes
first too: while it is calling, the sweep takes at most CALLING_SHARE of the owner's
thread (a step that spent t seconds waits t * (1 / CALLING_SHARE - 1) before the next):
a step diagnoses one pod at least, and at 20,000 nodes one diagnosis held every filter
and bind queued behind it for a tenth of a second or more (issue 26).

A pod's first reason is the one most nodes give (the diagnosis's largest group), or
FITS when some node takes it now. Each reason keeps the summary of the first pod the sweep
counted under it (kube-scheduler's "0/N nodes are available: ..."), so the health banner
can say it in full (`top`).
"""
import marshal
import time

PERIOD = 30.0     # seconds between the starts of two sweeps
BUDGET = 0.02     # seconds of the owner's thread a flush may spend on a sweep
BEHIND = 1.0      # seconds of feed lag past which the sweep waits
CALLING_SHARE = 0.2   # of the owner's thread the sweep may take while kube-scheduler calls
FITS = "fits a node now"

# What decides where a pod may go (the rest of a pod, its name and uid, does not).
_SPEC = ("containers", "initContainers", "overhead", "tolerations", "nodeSelector",
         "affinity", "priority", "preemptionPolicy", "volumes")


def signature(pod) -> bytes:
    """Equal for pods a diagnosis cannot tell apart (labels count: placed pods' anti-affinity
    selects by them)."""
    metadata, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    return marshal.dumps((metadata.get("namespace"), metadata.get("labels"),
                          [spec.get(name) for name in _SPEC]))


def first_reason(diagnosis) -> str:
    if diagnosis.fits:
        return FITS
    reasons = diagnosis.reasons()
    return reasons[0]["reason"] if reasons else FITS


class PendingReasons:
    """`diagnoser`: scheduling.diagnosis.Diagnoser over `cache`; `pending`: the owner's
    PendingPods (which keeps an assumed pod until the watch sees it bound: not counted)."""

    def __init__(self, diagnoser, cache, pending, timer=time.perf_counter):
        self.diagnoser = diagnoser
        self.cache = cache
        self.pending = pending
        self.timer = timer
        self.counts = {}          # reason -> pods, as the last complete sweep found them
        self.reasons = {}         # uid -> its first reason, as that sweep found it (the
                                  # Pending page's column: a uid and a shared string a pod)
        self.summaries = {}       # reason -> the filter summary of one pod counted under it
        self._summaries = {}      # ... so far
        self._found = {}          # uid -> reason, so far
        self._queue = None        # the pods the running sweep has still to count
        self._sweep = {}          # reason -> pods, so far
        self._shared = {}         # signature -> reason, this sweep's
        self._next = 0.0
        self._resume = 0.0        # while kube-scheduler calls, no step before this time
        self.sweeps = 0           # complete sweeps so far (the pages' reasons moved)

    def step(self, now: float, lag: float = 0.0, calling: bool = False) -> None:
        """Continue (or start, once PERIOD has passed) the sweep, within BUDGET; nothing
        while the feed is `lag` seconds behind, past BEHIND, nor while kube-scheduler is
        `calling` and the last step's share of the time since is spent."""
        if lag > BEHIND or (calling and now < self._resume):
            return
        if self._queue is None:
            if now < self._next:
                return
            self._queue, self._sweep, self._shared, self._found, self._summaries = (
                list(self.pending), {}, {}, {}, {})
            self._next = now + PERIOD
        began = self.timer()
        stop = began + BUDGET
        queue = self._queue
        while queue:     # one pod at least each step, so every sweep ends
            uid = queue.pop()
            entry = self.pending.entry(uid)
            if entry is None or self.cache.pod_info(uid) is not None:
                continue
            reason = self._shared.get(entry.signature)
            if reason is None:     # the pod is thawed only to be diagnosed
                diagnosis = self.diagnoser.diagnose(entry.pod)
                reason = self._shared[entry.signature] = first_reason(diagnosis)
                self._summaries.setdefault(reason, diagnosis.filter_message())
            self._sweep[reason] = self._sweep.get(reason, 0) + 1
            self._found[uid] = reason
            if self.timer() >= stop:
                break
        self._resume = now + (self.timer() - began) * (1 / CALLING_SHARE - 1)
        if not queue:
            self.counts, self.reasons, self.summaries, self._queue = (
                self._sweep, self._found, self._summaries, None)
            self.sweeps += 1

    def forget(self, uid) -> None:
        """A pod left the pending pods: the counts lose it now, not at the next sweep (the
        health banner links to the top reason's pods, which must still be there)."""
        reason = self.reasons.pop(uid, None)
        if reason is not None:
            self.counts = _less(self.counts, reason)   # a new dict: the published status has it
        reason = self._found.pop(uid, None)
        if reason is not None:
            self._sweep = _less(self._sweep, reason)

    def recount(self) -> None:
        """What a diagnosis reads beyond the cache changed (the claims there are): the next
        sweep starts at the next step, or as soon as the running one ends. Not a restart:
        under a stream of changes a restarted sweep would never end."""
        self._next = 0.0

    def top(self, n: int) -> list:
        """The `n` reasons most pods wait for, most first: [{reason, pods, summary}]."""
        ranked = sorted(self.counts.items(), key=lambda item: (-item[1], item[0]))[:n]
        return [{"reason": reason, "pods": pods, "summary": self.summaries.get(reason, "")}
                for reason, pods in ranked]


def _less(counts: dict, reason: str) -> dict:
    """`counts` with one pod fewer under `reason` (a reason with none left is gone)."""
    counts = dict(counts)
    if counts.get(reason, 0) > 1:
        counts[reason] -= 1
    else:
        counts.pop(reason, None)
    return counts
