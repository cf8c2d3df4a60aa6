"""PoolScheduler with the clock and the claim threads in the test's hands."""
import threading

import pytest

from warmpool import ClaimRefused, PoolScheduler
from warmpool.podstate import RUNNING

from tests.warmpool.poolkit import Claimer, Clock, ManualExecutor, conflict, members, pod, request


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def pool(clock):
    executor, claimer, m = ManualExecutor(), Claimer(), members()
    scheduler = PoolScheduler("web", m, claimer, executor=executor, clock=clock, capacity=8,
                              max_inflight=4)
    scheduler.executor, scheduler.claimer_log = executor, claimer
    return scheduler


def idle(pool, *names, since=0.0):
    for i, name in enumerate(names):
        pool.members.apply(pod(name, idle_since=since + i))


def test_immediate_dispatch(pool, clock):
    idle(pool, "a")
    req, waiter = request(clock)
    assert pool.enqueue(req)
    pool.step(clock())
    assert pool.status()["claims_in_flight"] == 1
    clock.advance(0.003)
    pool.executor.run_all()
    result = waiter.result
    assert result.ok and result.key == "pools/a" and result.attempts == 1
    assert result.latency == pytest.approx(0.003)
    assert pool.claimer_log.calls == [("pools/a", "1", req.id)]
    assert pool.metrics.outcomes["success"] == 1 and pool.metrics.latency.total == 1


def test_oldest_idle_pod_goes_to_the_oldest_request(pool, clock):
    idle(pool, "c", "a", "b")                 # turned idle in this order
    reqs = [request(clock) for _ in range(3)]
    for req, _ in reqs:
        pool.enqueue(req)
    pool.step(clock())
    pool.executor.run_all()
    assert [w.result.key for _, w in reqs] == ["pools/c", "pools/a", "pools/b"]


def test_relist_orders_idle_pods_by_idle_since(pool, clock):
    pool.members.replace([pod("late", idle_since=30), pod("early", idle_since=10),
                          pod("busy", phase=RUNNING, idle_since=1)])
    pool.step(clock())
    assert pool.ready.keys() == ["pools/early", "pools/late"]


def test_scale_down_protected_pods_are_skipped(pool, clock):
    pool.members.apply(pod("kept", protected=True))
    idle(pool, "free", since=5)
    req, waiter = request(clock)
    pool.enqueue(req)
    pool.step(clock())
    pool.executor.run_all()
    assert waiter.result.key == "pools/free"
    assert pool.claimer_log.keys == ["pools/free"]


def test_conflict_retries_with_the_next_pod_and_keeps_the_reservation(pool, clock):
    idle(pool, "a", "b")
    pool.claimer_log.outcomes["pools/a"] = conflict("pools/a")
    req, waiter = request(clock)
    pool.enqueue(req)
    pool.step(clock())
    pool.executor.run_all()                   # a: 409, the request is queued again
    assert waiter.result is None and pool.reservations.is_reserved("pools/a", clock())
    pool.step(clock())
    pool.executor.run_all()
    assert waiter.result.ok and waiter.result.key == "pools/b" and waiter.result.attempts == 2
    assert pool.metrics.outcomes["retriable"] == 1
    pool.step(clock())                        # a is still idle in the watch, but reserved
    assert "pools/a" not in pool.ready


def test_unexpected_phase_is_a_conflict_without_an_api_call(pool, clock):
    idle(pool, "a", "b")
    req, waiter = request(clock)
    pool.enqueue(req)
    pool.step(clock())
    pool.members.apply(pod("a", phase=RUNNING, rv="2"))   # someone else took it meanwhile
    pool.executor.run_all()
    pool.step(clock())
    pool.executor.run_all()
    assert waiter.result.key == "pools/b"
    assert pool.claimer_log.keys == ["pools/b"]


def test_hard_error_releases_the_reservation_and_fails_the_request(pool, clock):
    idle(pool, "a")
    pool.claimer_log.outcomes["pools/a"] = ClaimRefused("HTTP 422: invalid")
    req, waiter = request(clock)
    pool.enqueue(req)
    pool.step(clock())
    pool.executor.run_all()
    assert not waiter.result.ok and waiter.result.outcome == "hard"
    assert "HTTP 422" in waiter.result.error
    assert not pool.reservations.is_reserved("pools/a", clock())
    assert pool.ready.keys() == ["pools/a"]   # still idle: claimable again at once
    assert pool.metrics.outcomes["hard"] == 1


def test_no_double_dispatch_while_the_claim_propagates(pool, clock):
    idle(pool, "a")
    first, w1 = request(clock)
    pool.enqueue(first)
    pool.step(clock())
    pool.executor.run_all()
    assert w1.result.ok
    pool.members.apply(pod("a", rv="1"))      # a stale event still shows it idle
    second, w2 = request(clock, timeout=10)
    pool.enqueue(second)
    clock.advance(1.9)
    pool.step(clock())
    assert pool.executor.jobs == [] and w2.result is None
    pool.members.apply(pod("a", phase=RUNNING, rv="2"))   # the claim comes back
    clock.advance(0.2)
    pool.step(clock())                        # reservation over, pod not idle: nothing
    assert pool.executor.jobs == [] and pool.metrics.reservations_expired == 1


def test_a_claimed_version_is_never_queued_again_even_if_its_event_is_lost(pool, clock):
    idle(pool, "a")
    first, w1 = request(clock)
    pool.enqueue(first)
    pool.step(clock())
    pool.executor.run_all()
    second, w2 = request(clock, timeout=10)
    pool.enqueue(second)
    clock.advance(2.5)                        # the reservation ended; the watch said nothing
    pool.step(clock())
    assert pool.executor.jobs == [] and "pools/a" not in pool.ready
    pool.members.apply(pod("a", rv="9"))      # its next change (handed back idle) is news
    pool.step(clock())
    pool.executor.run_all()
    assert w2.result.ok and pool.claimer_log.calls[-1][:2] == ("pools/a", "9")


def test_after_the_ttl_a_still_idle_pod_is_claimable_again(pool, clock):
    idle(pool, "a")
    pool.claimer_log.outcomes["pools/a"] = conflict("pools/a")
    req, waiter = request(clock, timeout=10)
    pool.enqueue(req)
    pool.step(clock())
    pool.executor.run_all()
    del pool.claimer_log.outcomes["pools/a"]
    start = clock()
    clock.advance(0.2)                        # past the idle notification's delay
    assert pool.step(clock()) == pytest.approx(start + 2.0)     # woken when the TTL ends
    clock.advance(1.8)
    pool.step(clock())
    pool.executor.run_all()
    assert waiter.result.ok and waiter.result.key == "pools/a"


def test_requests_wait_for_pods_to_turn_idle(pool, clock):
    pool.members.apply(pod("a", phase=RUNNING))
    req, waiter = request(clock, timeout=10)
    pool.enqueue(req)
    pool.step(clock())
    assert pool.executor.jobs == []
    pool.members.apply(pod("a", rv="5"))      # turned idle: notify_idle, 200 ms delay
    next_at = pool.step(clock() - 1)          # (a step before the delay changes nothing)
    assert next_at == pytest.approx(clock() + 0.2)
    clock.advance(0.2)
    pool.step(clock())
    pool.executor.run_all()
    assert waiter.result.ok and waiter.result.key == "pools/a"


def test_expired_and_cancelled_requests_fail_without_touching_a_pod(pool, clock):
    idle(pool, "a")
    late, w_late = request(clock, timeout=-0.1)
    cancelled = threading.Event()
    gone, w_gone = request(clock, cancelled=cancelled)
    cancelled.set()
    pool.enqueue(late)
    pool.enqueue(gone)
    pool.step(clock())
    assert w_late.result.outcome == "expired" and "deadline" in w_late.result.error
    assert w_gone.result.outcome == "expired" and "cancelled" in w_gone.result.error
    assert pool.claimer_log.calls == [] and pool.ready.keys() == ["pools/a"]


def test_a_request_expiring_in_flight_fails_and_gives_the_pod_back(pool, clock):
    idle(pool, "a")
    req, waiter = request(clock, timeout=1)
    pool.enqueue(req)
    pool.step(clock())
    clock.advance(1.5)                        # the claim thread started too late
    pool.executor.run_all()
    assert waiter.result.outcome == "expired" and pool.claimer_log.calls == []
    assert pool.ready.keys() == ["pools/a"]


def test_pending_requests_fail_at_their_deadline(pool, clock):
    req, waiter = request(clock, timeout=3)
    pool.enqueue(req)
    assert pool.step(clock()) == pytest.approx(clock() + 3)
    clock.advance(3)
    pool.step(clock())
    assert waiter.result.outcome == "expired"
    assert pool.metrics.outcomes["expired"] == 1


def test_a_full_queue_refuses_at_once(pool, clock):
    accepted = [pool.enqueue(request(clock)[0]) for _ in range(10)]
    assert accepted == [True] * 8 + [False] * 2
    assert pool.metrics.refused == 2


def test_claims_in_flight_are_bounded(pool, clock):
    idle(pool, *[f"p{i}" for i in range(10)])
    for _ in range(10):
        pool.enqueue(request(clock)[0])
    pool.step(clock())
    assert len(pool.executor.jobs) == 4 and pool.status()["queue_length"] == 8 - 4


def test_slow_poll_finds_missed_pods_and_backs_off(pool, clock):
    pool.members.replace([pod("a")])
    pool.members.take_changes()               # the change was lost
    req, waiter = request(clock, timeout=100)
    pool.enqueue(req)
    clock.advance(0.2)
    assert pool.step(clock()) == pytest.approx(clock() + 9.8)    # the poll, 10 s after start
    assert waiter.result is None
    clock.advance(9.8)
    pool.step(clock())
    pool.executor.run_all()
    assert waiter.result.ok and pool.metrics.polls == 1
    assert pool.status()["poll_interval"] == 10   # it dispatched: the next poll in 10 s
    clock.advance(10)
    pool.step(clock())                        # nothing dispatched: 20 s, then 40, 80, 80
    assert pool.status()["poll_interval"] == 20
    for gap in (20, 40, 80):
        clock.advance(gap)
        pool.step(clock())
    assert pool.status()["poll_interval"] == 80


def test_shutdown_fails_pending_requests_and_drains_claims_in_flight(pool, clock):
    idle(pool, "a")
    reqs = [request(clock) for _ in range(3)]
    for req, _ in reqs:
        pool.enqueue(req)
    pool.step(clock())                        # one claim in flight, two pending
    done = threading.Event()
    threading.Thread(target=lambda: (pool.shutdown(timeout=10), done.set())).start()
    assert reqs[2][1].wait(5).error == "pool 'web' is shutting down: no idle pods"
    assert reqs[1][1].result.outcome == "shutdown"
    assert not done.is_set()                  # still draining the claim in flight
    pool.executor.run_all()
    assert done.wait(5) and reqs[0][1].result.ok
    assert not pool.enqueue(request(clock)[0])


def test_status_counts_down_reservations(pool, clock):
    idle(pool, "a", "b")
    pool.enqueue(request(clock)[0])
    pool.step(clock())
    pool.executor.run_all()
    status = pool.status(now=clock() + 0.5)
    assert status["reservations"] == [{"key": "pools/a", "remaining": 1.5}]
    assert status["reserved"] == 1
    assert pool.status(head=0)["reservations"] == [] and pool.status(head=0)["reserved"] == 1
    assert status["idle_ready"] == 1 and status["ready_head"] == ["pools/b"]
    assert status["last_dispatch_ago"] == 0.5
