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
"""
import threading
from collections import deque

from dashboard.owner.commands import run_handler
from dashboard.wire.commands import CommandError, OwnerUnavailable

_QUEUED, _TAKEN, _ABANDONED = "queued", "taken", "abandoned"


class _Call:
    __slots__ = ("op", "args", "actor", "state", "done", "result", "error")

    def __init__(self, op, args, actor):
        self.op, self.args, self.actor = op, args, actor
        self.state = _QUEUED
        self.done = threading.Event()
        self.result = self.error = None


class OwnerCalls:
    """`call(op, args, timeout)` from any thread; `serve()` and `wait()` from the owner's.

    handlers: op -> handler(args, actor), the owner's command handlers (so calls are
    counted and their transitions recorded as the owner's commands are); `actor` names
    the caller of calls that name none."""

    def __init__(self, handlers: dict, actor: str):
        self.handlers = handlers
        self.actor = actor
        self._queue = deque()
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
        """Run every queued call in the caller's (the owner's) thread; returns how many ran."""
        with self._lock:
            calls = [c for c in self._queue if c.state == _QUEUED]
            self._queue.clear()
            for call in calls:
                call.state = _TAKEN
        for call in calls:
            try:
                call.result = self._run(call)
            except CommandError as exc:
                call.error = exc
            finally:
                call.done.set()
        return len(calls)

    def _run(self, call):
        return run_handler(self.handlers, call.op, call.args, call.actor, "owner call")

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
        ones as unavailable."""
        with self._lock:
            self._closed = True
            calls = [c for c in self._queue if c.state == _QUEUED]
            self._queue.clear()
            for call in calls:
                call.state = _ABANDONED
                call.error = OwnerUnavailable("the cache owner has stopped")
                call.done.set()
