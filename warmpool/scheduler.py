"""PoolScheduler: one loop per pool handing idle pods to claim requests as they arrive.

The loop (`run`, or `step(now)` called by tests) never waits on the API server:
it pops the longest-idle ready pod for the oldest pending request, reserves the
pod, and hands the compare-and-swap to `executor`, with at most `max_inflight`
claims out at once. The claim's thread reports back:

- success: the request gets the pod; the reservation stays until the watch shows
  the pod claimed (or its TTL ends);
- conflict (409 on the CAS, or the pod is no longer idle when the claim starts):
  the request goes back to the head of the queue and tries the next pod; the
  reservation stays, so the pod is not picked again until the watch catches up;
- anything else: the reservation is released, the pod is queued again if it is
  still idle, and the request fails;
- a request past its deadline (or cancelled) fails without touching a pod.

A version a claim used up is never tried again: if the watch loses the event
that shows the pod claimed, the pod waits for its next change instead of
conflicting each time its reservation ends. (A conflicting pod's version is
tried again after its reservation: the 409 may have come from a write that left
the pod idle.)

What wakes the loop: an enqueue, a finished claim, `notify_idle` (after
`idle_notify_delay`, so the watch has shown the idle pod), a deadline or a
reservation ending, and a slow poll (a full resync from the members) every
`poll_interval`, doubling up to `poll_max` while nothing dispatches.
"""
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from warmpool.claims import ClaimConflict, ClaimRequest, ClaimResult
from warmpool.members import PoolMembers
from warmpool.metrics import PoolMetrics
from warmpool.podstate import PoolPod
from warmpool.ready import ReadyQueue
from warmpool.reservations import DEFAULT_TTL, Reservations

Claimer = Callable[[PoolPod, object, str], dict]   # (pod, ClaimOptions, claim id) -> pod


class PoolScheduler:
    def __init__(self, pool: str, members: PoolMembers, claimer: Claimer, *,
                 capacity: int = 1024, max_inflight: int = 32,
                 reservation_ttl: float = DEFAULT_TTL, idle_notify_delay: float = 0.2,
                 poll_interval: float = 10.0, poll_max: float = 80.0, executor=None,
                 clock: Callable[[], float] = time.monotonic):
        if capacity < 1 or max_inflight < 1:
            raise ValueError("capacity and max_inflight must be at least 1")
        self.pool = pool
        self.members = members
        if members.on_idle is None:
            members.on_idle = self.notify_idle
        self.claimer = claimer
        self.capacity = capacity
        self.max_inflight = max_inflight
        self.idle_notify_delay = idle_notify_delay
        self.poll_interval = poll_interval
        self.poll_max = poll_max
        self.clock = clock
        self.ready = ReadyQueue()
        self.reservations = Reservations(reservation_ttl)
        self.metrics = PoolMetrics()
        self._own_executor = executor is None
        self._executor = executor or ThreadPoolExecutor(max_inflight,
                                                        thread_name_prefix=f"claim-{pool}")
        self._cond = threading.Condition(threading.Lock())
        self._pending: deque[ClaimRequest] = deque()
        self._inflight = 0
        self._spent: dict[str, str] = {}   # pod key -> the version a successful claim used
        self._kick = False             # something to do now: the loop must not sleep
        self._wake_at = None           # notify_idle's delayed wake
        self._next_deadline = float("inf")
        now = clock()
        self._poll_gap = poll_interval
        self._next_poll = now + poll_interval
        self._dispatched_since_poll = False
        self.last_dispatch = None      # clock time of the last successful claim
        self._closed = False           # shutdown began: no more enqueues
        self._stopped = False          # the loop must end
        self._thread = None

    # -- callers (any thread) -------------------------------------------------------

    def enqueue(self, request: ClaimRequest) -> bool:
        """Queue a claim; False at once (and no reply) when the queue is full or the
        scheduler is shutting down: the caller turns that into backpressure."""
        with self._cond:
            if self._closed or len(self._pending) >= self.capacity:
                self.metrics.refused += 1
                return False
            if request.enqueued_at is None:
                request.enqueued_at = self.clock()
            self._pending.append(request)
            self._next_deadline = min(self._next_deadline, request.deadline)
            self._kick = True
            self._cond.notify()
        return True

    def notify_idle(self) -> None:
        """A pod of this pool turned idle: refresh and dispatch after the short delay."""
        with self._cond:
            at = self.clock() + self.idle_notify_delay
            if self._wake_at is None or at < self._wake_at:
                self._wake_at = at
            self._cond.notify()

    # -- the loop -----------------------------------------------------------------------

    def start(self) -> "PoolScheduler":
        self._thread = threading.Thread(target=self.run, name=f"pool-{self.pool}", daemon=True)
        self._thread.start()
        return self

    def run(self) -> None:
        """Step whenever there is work or a timer is due; returns after shutdown()."""
        while True:
            next_at = self.step(self.clock())
            with self._cond:
                if self._stopped:
                    return
                if self._kick:
                    continue
                timeout = None if next_at is None else max(0.0, next_at - self.clock())
                self._cond.wait(timeout)

    def step(self, now: float) -> float | None:
        """Expire, refresh, fail late requests, dispatch. Returns when the next timer is
        due (None: only an enqueue, a finished claim or a notify can bring work)."""
        replies, jobs = [], []
        with self._cond:
            self._kick = False
            for key in self.reservations.expire(now):
                self.metrics.reservations_expired += 1
                self._observe(key, now)
            self._refresh(now)
            if self._wake_at is not None and now >= self._wake_at:
                self._wake_at = None
            polled = now >= self._next_poll
            if polled:
                self._poll(now)
            if now >= self._next_deadline:
                self._fail_late(now, replies)
            if not self._closed:
                self._dispatch(now, jobs, replies)
            if polled:
                self._schedule_poll(now)
            next_at = self._next_timer()
        for request, result in replies:
            request.reply(result)
        for request, pod in jobs:
            self._executor.submit(self._claim, request, pod)
        return next_at

    def _observe(self, key: str, now: float) -> None:
        pod = self.members.get(key)
        spent = self._spent.get(key)
        if spent is not None and (pod is None or pod.resource_version != spent):
            del self._spent[key]      # the watch has moved on: this version is news
            spent = None
        self.ready.observe(key, pod, spent is not None
                           or self.reservations.is_reserved(key, now))

    def _refresh(self, now: float) -> None:
        changed = self.members.take_changes()
        if changed:
            self.metrics.refreshes += 1
            for key in changed:
                self._observe(key, now)

    def _poll(self, now: float) -> None:
        """The fallback: requeue every claimable member the notifications missed."""
        self.metrics.polls += 1
        for pod in self.members.claimable():
            if pod.key not in self.ready:
                self._observe(pod.key, now)

    def _schedule_poll(self, now: float) -> None:
        """The next poll: soon again after a dispatch, later and later while idle."""
        if self._dispatched_since_poll:
            self._poll_gap = self.poll_interval
        else:
            self._poll_gap = min(self._poll_gap * 2, self.poll_max)
        self._dispatched_since_poll = False
        self._next_poll = now + self._poll_gap

    def _fail_late(self, now: float, replies: list) -> None:
        kept = deque()
        soonest = float("inf")
        for request in self._pending:
            if request.expired(now):
                self.metrics.outcomes["expired"] += 1
                replies.append((request, self._expired(request)))
            else:
                kept.append(request)
                soonest = min(soonest, request.deadline)
        self._pending = kept
        self._next_deadline = soonest

    def _dispatch(self, now: float, jobs: list, replies: list) -> None:
        pending = self._pending
        while pending and self._inflight < self.max_inflight:
            request = pending[0]
            if request.expired(now):
                pending.popleft()
                self.metrics.outcomes["expired"] += 1
                replies.append((request, self._expired(request)))
                continue
            pod = self.ready.pop()
            if pod is None:
                return
            pending.popleft()
            request.attempts += 1
            self.reservations.reserve(pod.key, now)
            self._inflight += 1
            self._dispatched_since_poll = True
            jobs.append((request, pod))

    def _next_timer(self) -> float | None:
        timers = [self._next_poll]
        if self._wake_at is not None:
            timers.append(self._wake_at)
        if self._pending:
            timers.append(self._next_deadline)
        expiry = self.reservations.next_expiry()
        if expiry is not None:
            timers.append(expiry)
        return min(timers)

    # -- a claim, on the executor's thread -------------------------------------------------

    def _claim(self, request: ClaimRequest, pod: PoolPod) -> None:
        if request.expired(self.clock()):
            self._finish(request, pod, self._expired(request), "expired", release=True)
            return
        try:
            current = self.members.get(pod.key)
            if current is None or not current.claimable:
                raise ClaimConflict(f"{pod.key} is {current.phase if current else 'gone'}, "
                                    "not Idle")
            claimed = self.claimer(pod, request.options, request.id)
        except ClaimConflict:
            self._retry(request)
        except Exception as error:  # noqa: BLE001 - any other failure is a hard one
            result = ClaimResult(False, "hard", key=pod.key, attempts=request.attempts,
                                 error=f"claiming {pod.key} failed: {error}")
            self._finish(request, pod, result, "hard", release=True)
        else:
            now = self.clock()
            latency = now - request.enqueued_at
            result = ClaimResult(True, "success", pod=claimed, key=pod.key, latency=latency,
                                 attempts=request.attempts)
            with self._cond:
                self.metrics.latency.observe(latency)
                self.last_dispatch = now
                self._spent[pod.key] = pod.resource_version
            self._finish(request, pod, result, "success", release=False)

    def _finish(self, request, pod, result, outcome, release: bool) -> None:
        with self._cond:
            self._inflight -= 1
            self.metrics.outcomes[outcome] += 1
            if release:
                self.reservations.release(pod.key)
                self._observe(pod.key, self.clock())
            self._kick = True
            self._cond.notify_all()
        request.reply(result)

    def _retry(self, request: ClaimRequest) -> None:
        """Conflict: the reservation stays; the request goes first in line again."""
        with self._cond:
            self._inflight -= 1
            self.metrics.outcomes["retriable"] += 1
            now = self.clock()
            if self._closed or request.expired(now):
                outcome = "shutdown" if self._closed else "expired"
                self.metrics.outcomes[outcome] += 1
                result = self._shut(request) if self._closed else self._expired(request)
            else:
                self._pending.appendleft(request)
                self._next_deadline = min(self._next_deadline, request.deadline)
                result = None
            self._kick = True
            self._cond.notify_all()
        if result is not None:
            request.reply(result)

    def _expired(self, request: ClaimRequest) -> ClaimResult:
        why = ("the request was cancelled" if request.cancelled is not None
               and request.cancelled.is_set() else "the request's deadline")
        return ClaimResult(False, "expired", attempts=request.attempts,
                           error=f"no idle pod of pool {self.pool!r} could be claimed before "
                                 f"{why}")

    def _shut(self, request: ClaimRequest) -> ClaimResult:
        return ClaimResult(False, "shutdown", attempts=request.attempts,
                           error=f"pool {self.pool!r} is shutting down: no idle pods")

    # -- shutdown ---------------------------------------------------------------------

    def shutdown(self, timeout: float = 30.0) -> bool:
        """Refuse new requests, fail the pending ones ("no idle pods"), let the claims in
        flight finish, and stop the loop. True if everything drained within `timeout`."""
        with self._cond:
            self._closed = True
            pending, self._pending = list(self._pending), deque()
            self.metrics.outcomes["shutdown"] += len(pending)
            self._cond.notify_all()
        for request in pending:
            request.reply(self._shut(request))
        with self._cond:
            drained = self._cond.wait_for(lambda: self._inflight == 0, timeout)
            self._stopped = True
            self._cond.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        if self._own_executor:
            self._executor.shutdown(wait=False)
        return drained

    # -- status -------------------------------------------------------------------------

    def status(self, now: float | None = None, head: int = 20) -> dict:
        """What a status page shows: the queue (its first `head` pods), the reservations
        (the `head` ending soonest, and how many), in-flight claims, metrics."""
        with self._cond:
            now = self.clock() if now is None else now
            return {
                "pool": self.pool,
                "members": len(self.members),
                "idle_ready": len(self.ready),
                "ready_head": [pod.key for pod in self.ready.head(head)],
                "queue_length": len(self._pending),
                "capacity": self.capacity,
                "claims_in_flight": self._inflight,
                "max_inflight": self.max_inflight,
                "reserved": len(self.reservations),
                "reservations": [{"key": key, "remaining": round(left, 3)}
                                 for key, left in self.reservations.remaining(now, head)],
                "reservation_ttl": self.reservations.ttl,
                "last_dispatch_ago": (None if self.last_dispatch is None
                                      else round(now - self.last_dispatch, 3)),
                "poll_interval": self._poll_gap,
                "shutting_down": self._closed,
                "metrics": self.metrics.snapshot(),
            }
