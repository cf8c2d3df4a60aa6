"""Calls handed to the owner's thread by other threads of the owner process.

The owner's listener answers kube-scheduler from threads of its own, but only the
owner's thread may touch the cache (the one-writer rule). A listener thread puts
its call here and waits; the owner's loop runs what is queued ahead of its other
work (`serve`, at the start of every step: the scheduling cycle is serial, so a
filter's latency is kube-scheduler's throughput) and wakes from its idle wait
when a call arrives (`wait`).

A call that is not answered within its timeout is abandoned and never runs: a
stale filter applied late would assume a pod kube-scheduler has given up on. A
call the owner has already started is waited for, so no answer is lost.

A call naming a pod the owner's watch has not shown yet (its handler raises UnseenPod)
is parked, not refused: kube-scheduler's informer often sees a new pod a moment before
the owner's watch does, and a refused preempt leaves the pod unschedulable until the
next cluster event (shared k8s-wire/extender 04a: no retry; 124 s on a real control
plane). The owner's thread never waits for it: each `serve` runs a parked call again
once the watch shows its pod, or for the last time at its deadline (`unseen_wait`
seconds after it was parked; the refusal then says so). The listener's worker that made
the call waits meanwhile, so at most MAX_PARKED calls are parked at once and any more
are refused at once: a client naming made-up uids holds that many workers for
`unseen_wait` at most, never the pool kube-scheduler needs (its scheduling cycle is
serial: one filter or preempt at a time).
"""
import threading
import time
from collections import deque

from dashboard.owner.commands import run_handler
from dashboard.wire.commands import CommandError, OwnerUnavailable

_QUEUED, _TAKEN, _ABANDONED = "queued", "taken", "abandoned"
MAX_PARKED = 8


class UnseenPod(CommandError):
    """A 400 for a call naming uid `uid`, which the owner's watch has not shown: the call
    is parked until it does (if the OwnerCalls parks calls)."""

    def __init__(self, uid: str, message: str):
        super().__init__(400, message)
        self.uid = uid


class _Call:
    __slots__ = ("op", "args", "actor", "state", "done", "result", "error", "unseen",
                 "parked_until")

    def __init__(self, op, args, actor):
        self.op, self.args, self.actor = op, args, actor
        self.state = _QUEUED
        self.done = threading.Event()
        self.result = self.error = None
        self.unseen = None          # the uid a parked call waits for
        self.parked_until = None    # when a parked call is answered whether or not


class OwnerCalls:
    """`call(op, args, timeout)` from any thread; `serve()` and `wait()` from the owner's.

    handlers: op -> handler(args, actor), the owner's command handlers (so calls are
    counted and their transitions recorded as the owner's commands are); `actor` names
    the caller of calls that name none. `seen(uid)`: whether the owner's watch has shown
    the pod; with it and `unseen_wait` > 0, a call raising UnseenPod is parked for up to
    `unseen_wait` seconds of `clock`."""

    def __init__(self, handlers: dict, actor: str, *, seen=None, unseen_wait: float = 0.0,
                 clock=time.monotonic):
        self.handlers = handlers
        self.actor = actor
        self.seen, self.unseen_wait, self.clock = seen, unseen_wait, clock
        self._queue = deque()
        self._parked = []           # only the owner's thread (and close) touch it
        self._lock = threading.Condition()
        self._closed = False

    def call(self, op: str, args: dict, timeout: float, actor: str = None):
        """The handler's result; raises its CommandError, or OwnerUnavailable (503) when
        the owner did not start the call within `timeout` seconds or has stopped."""
        call = _Call(op, args, actor or self.actor)
        with self._lock:
            if self._closed:
                raise OwnerUnavailable("the cache owner has stopped")
            self._queue.append(call)
            self._lock.notify()
        if not call.done.wait(timeout):
            with self._lock:
                if call.state == _QUEUED:
                    call.state = _ABANDONED
                    raise OwnerUnavailable(
                        f"the cache owner did not take {op!r} within {timeout:g}s")
            call.done.wait()   # the owner took it just in time: its answer is coming
        if call.error is not None:
            raise call.error
        return call.result

    def serve(self) -> int:
        """Run every queued call, and every parked call whose pod the watch now shows or
        whose deadline has passed, in the caller's (the owner's) thread; returns how many
        ran."""
        with self._lock:
            calls = [c for c in self._queue if c.state == _QUEUED]
            self._queue.clear()
            for call in calls:
                call.state = _TAKEN
            now = self.clock()
            due = [c for c in self._parked if now >= c.parked_until or self.seen(c.unseen)]
            if due:
                self._parked = [c for c in self._parked if c not in due]
        for call in due + calls:
            self._answer(call, now)
        return len(due) + len(calls)

    def _answer(self, call, now):
        try:
            call.result = self._run(call)
        except UnseenPod as exc:
            if call.parked_until is not None:   # its last run, at its deadline
                why = f"the owner's watch did not show it within {self.unseen_wait:g} s"
            else:
                why = self._park(call, exc.uid, now)
                if why is None:
                    return                      # answered by a later serve
            call.error = CommandError(exc.status, f"{exc.message}: {why}") if why else exc
        except CommandError as exc:
            call.error = exc
        call.done.set()

    def _park(self, call, uid, now):
        """Park the call until the watch shows `uid`: None, or why it is refused instead
        ("" when this OwnerCalls parks nothing)."""
        if self.seen is None or self.unseen_wait <= 0:
            return ""
        with self._lock:
            if self._closed:
                return "the cache owner is stopping"
            if len(self._parked) >= MAX_PARKED:
                return f"{MAX_PARKED} calls already wait for pods the watch has not shown"
            call.unseen, call.parked_until = uid, now + self.unseen_wait
            self._parked.append(call)
        return None

    def _run(self, call):
        return run_handler(self.handlers, call.op, call.args, call.actor, "owner call")

    @property
    def parked(self) -> int:
        """How many calls wait for the watch to show their pod."""
        return len(self._parked)

    def wait(self, timeout: float) -> bool:
        """Block until a call is queued or `timeout` seconds pass; whether one is queued."""
        with self._lock:
            return self._lock.wait_for(lambda: self._queue, timeout)

    def open(self) -> None:
        """Take calls (again): a listener starts serving kube-scheduler."""
        with self._lock:
            self._closed = False

    def close(self) -> None:
        """The owner stops, or its listener closes: refuse new calls and answer the queued
        and parked ones as unavailable."""
        with self._lock:
            self._closed = True
            calls = [c for c in self._queue if c.state == _QUEUED] + self._parked
            self._queue.clear()
            self._parked = []
            for call in calls:
                call.state = _ABANDONED
                call.error = OwnerUnavailable("the cache owner has stopped")
                call.done.set()
