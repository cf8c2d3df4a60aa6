"""The leader lease (redis-py's Lock, its term in the database) on the run's real Redis and
PostgreSQL, its renewal thread, and the backoff the owner's loop meets Redis outages with."""
import logging
import socket
import threading
import time
import uuid

import pytest
import redis
from django.conf import settings
from django.db import OperationalError, connections

from dashboard.models import LeaseTerm
from dashboard.management.commands import watch
from dashboard.owner import runner
from dashboard.owner.leader import LeaderLease
from dashboard.runtime.redis_outage import RedisBackoff, loop_client
from dashboard.wire.clients import redis_client
from dashboard.wire.keys import lease_term
from tests.faultproxy import BLACKHOLE, FaultProxy
from tests.waiting import wait_for


class Clock:
    def __init__(self, now=1000.0):
        self.now = now

    def __call__(self):
        return self.now


pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def key(redis_url):
    name = f"schedview:test:lease:{uuid.uuid4().hex}"
    yield name
    redis_client(settings.REDIS_URL).delete(name, f"{name}:term")


def lease(key, holder, seconds=5.0, clock=None):
    """A lease of `seconds`, renewed every tenth of it, doubted at two thirds of it."""
    return LeaderLease(redis_client(settings.REDIS_URL), key, duration=seconds,
                       renew_deadline=seconds * 2 / 3, retry=seconds / 10, holder=holder,
                       **({"clock": clock} if clock else {}))


def expired(key):
    wait_for(lambda: not redis_client(settings.REDIS_URL).exists(key), 10,
             "the lease to expire in Redis")


def in_thread(waiting):
    """`waiting` for a thread of its own, which closes its database connection (the term's)
    when done, as the owner's thread does when the process ends."""
    def run():
        try:
            waiting()
        finally:
            connections.close_all()
    return run


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_one_owner_holds_the_lease_and_another_cannot_take_it(key):
    a, b = lease(key, "a"), lease(key, "b")
    assert a.try_acquire() and a.held()
    assert not b.try_acquire() and not b.held()
    assert a.renew()
    assert a.holder().startswith("a:")
    a.release()
    assert not a.held() and b.try_acquire()


def test_the_leader_stops_counting_on_its_lease_at_the_renew_deadline(key):
    clock = Clock()
    a = lease(key, "a", seconds=15.0, clock=clock)
    assert (a.duration, a.renew_deadline, a.retry) == (15.0, 10.0, 1.5)
    assert a.try_acquire()
    clock.now += 10.0 - 0.01
    assert a.held()
    clock.now += 0.02
    assert not a.held()
    assert a.renew() and a.held()       # a renewal counts from when it was sent


def test_the_durations_default_to_client_gos():
    a = LeaderLease(redis_client(settings.REDIS_URL), holder="a")
    assert (a.duration, a.renew_deadline, a.retry) == (15.0, 10.0, 2.0)


def test_every_taking_bumps_the_term_in_the_database_and_its_copy_in_redis(key):
    a, b = lease(key, "a"), lease(key, "b")
    assert a.try_acquire()
    assert LeaseTerm.current() == a.term
    a.release()
    assert b.try_acquire() and b.term == a.term + 1 == LeaseTerm.current()
    assert int(redis_client(settings.REDIS_URL).get(b.term_key)) == b.term


def test_a_lease_that_expired_with_nobody_taking_it_is_taken_back_under_its_term(key):
    a = lease(key, "a", seconds=0.3)
    assert a.try_acquire()
    term = a.term
    expired(key)
    assert a.renew() and a.held()
    assert a.term == term == LeaseTerm.current() and a.holder().startswith("a:")


def test_an_emptied_redis_is_no_takeover(key):
    """Redis restarted empty (FLUSHDB): the lease and the term's copy are gone; the database
    proves nobody led since, so the leader takes both back under its own term."""
    client = redis_client(settings.REDIS_URL)
    a = lease(key, "a")
    assert a.try_acquire()
    client.delete(key, a.term_key)
    assert a.renew() and a.held() and not a.lost.is_set()
    assert a.holder().startswith("a:") and int(client.get(a.term_key)) == a.term


def test_a_lease_another_owner_took_is_lost(key):
    a, b = lease(key, "a", seconds=0.3), lease(key, "b", seconds=5.0)
    assert a.try_acquire()
    expired(key)
    assert b.try_acquire()
    assert not a.renew() and not a.held() and a.lost.is_set()
    assert b.holder().startswith("b:")


def test_a_lease_another_owner_held_in_between_is_not_taken_back(key):
    a, b = lease(key, "a", seconds=0.3), lease(key, "b", seconds=0.3)
    assert a.try_acquire()
    expired(key)
    assert b.try_acquire()
    b.release()
    assert not a.renew() and not a.held()
    assert not redis_client(settings.REDIS_URL).exists(key), \
        "the stale owner let go of what it took"


def test_a_starved_owner_thread_does_not_starve_the_renewal(key):
    """The owner's thread busy in pure Python for three lease periods (a comparison, a long
    flush): the renewal's own thread keeps the lease, and nobody else can take it."""
    a, b = lease(key, "a", seconds=1.0), lease(key, "b", seconds=1.0)
    doubts = []
    assert a.try_acquire()
    a.start_renewing(on_doubt=lambda: doubts.append("doubt"))
    try:
        busy_until = time.monotonic() + 3.0
        while time.monotonic() < busy_until:    # starving, not waiting: it never blocks
            sum(range(10_000))
        assert a.held() and doubts == []
        assert not b.try_acquire()
    finally:
        a.stop_renewing()


def test_the_renewal_thread_tells_the_owner_at_once_when_the_lease_is_lost(key):
    """It finds another owner holding the lease at its next renewal, and calls `on_doubt`
    then (where the owner closes kube-scheduler's listener), whatever the owner's thread does."""
    a, b = lease(key, "a", seconds=1.0), lease(key, "b", seconds=5.0)
    doubted = threading.Event()
    assert a.try_acquire()
    a.start_renewing(on_doubt=doubted.set)
    try:
        redis_client(settings.REDIS_URL).delete(key)
        assert b.try_acquire()
        wait_for(doubted.is_set, 5, "the renewal thread to find the lease lost")
        assert a.lost.is_set() and not a.held()
        assert b.holder().startswith("b:")
    finally:
        a.stop_renewing()


def test_an_unreachable_redis_is_an_error_the_backoff_spaces_tries_at(key):
    dead = loop_client(f"redis://127.0.0.1:{closed_port()}/0")
    a = LeaderLease(dead, key, holder="a")
    clock = Clock()
    backoff = RedisBackoff("test", cap=1.0, base=0.5, clock=clock)
    assert backoff.attempt(a.try_acquire) == (False, None)
    assert backoff.down and not backoff.ready()
    clock.now += 1.0                    # the cap: the next try is due
    assert backoff.ready()
    assert backoff.attempt(a.try_acquire) == (False, None) and backoff.failures == 2
    with pytest.raises(redis.ConnectionError):
        a.try_acquire()
    clock.now += 1.0
    assert backoff.attempt(lambda: "answered") == (True, "answered")
    assert not backoff.down and backoff.ready()


@pytest.mark.parametrize("ending, outcome", [("stop", False), ("release", True)])
def test_a_standby_waits_until_the_lease_is_free_or_it_is_told_to_stop(key, ending, outcome):
    a, b = lease(key, "a"), lease(key, "b")
    assert a.try_acquire()
    stop = threading.Event()
    result = []
    waiter = threading.Thread(target=in_thread(lambda: result.append(b.wait(stop, poll=0.05))))
    waiter.start()
    if ending == "stop":
        stop.set()
    else:
        a.release()
    waiter.join(5)
    assert result == [outcome] and b.held() is outcome


def test_an_owner_restarted_under_its_dead_self_lets_the_standby_take_over(key):
    """The supervisor restarts a killed leader within a second, while its lease still
    lives: the standby that was waiting takes the lease when it expires, not the newcomer,
    which contends only a lease period after it started (here: much later)."""
    dead = lease(key, "owner-a", seconds=1.0)
    assert dead.try_acquire()                               # then it is killed: no renew
    standby, restarted = lease(key, "owner-b", seconds=1.0), lease(key, "owner-a", seconds=60)
    stop, won = threading.Event(), []
    waiters = [threading.Thread(target=in_thread(lambda w=w: w.wait(stop, poll=0.05)
                                               and won.append(w)))
               for w in (restarted, standby)]
    for waiter in waiters:
        waiter.start()
    try:
        wait_for(lambda: won, 5, "a waiter to take the lease")
    finally:
        stop.set()
        for waiter in waiters:
            waiter.join(5)
    assert won == [standby]


def test_an_owner_that_cannot_work_gives_the_lease_to_a_healthy_standby(key, monkeypatch):
    """Its database broken (issue 22, item 2): the owner fails as it starts leading, closes
    its connections, gives the lease back and pauses at least a renewal period before
    contending again, so the standby, which looks every half second, takes the lease."""
    failures, closed = [], []

    def broken(stop, redis, lease, probes=None, dump_signal=None):
        failures.append(lease.term)
        raise OperationalError("the connection is closed (test)")
    monkeypatch.setattr(runner, "run", broken)
    monkeypatch.setattr(watch.db.connections, "close_all", lambda: closed.append(1))
    # Renewal every second: longer than the standby's look at the lease, as by default.
    sick, healthy = lease(key, "sick", seconds=10.0), lease(key, "healthy", seconds=10.0)
    stop, won = threading.Event(), []
    command = watch.Command()
    sick_thread = threading.Thread(target=in_thread(lambda: command.own_while_leading(
        stop, None, sick, watch.OwnerProbes(), "sick")))
    sick_thread.start()
    try:
        wait_for(lambda: failures, 5, "the sick owner to lead and fail")
        standby = threading.Thread(target=in_thread(
            lambda: healthy.wait(stop) and won.append(healthy)))
        standby.start()
        wait_for(lambda: won, 5, "the healthy standby to take the lease")
        closed_by_then = len(closed)
    finally:
        stop.set()
        sick_thread.join(10)
        standby.join(10)
    assert healthy.holder().startswith("healthy:") and len(failures) == 1
    assert closed_by_then, "the broken connections were not closed"


@pytest.fixture
def leader_log():
    """What the lease logs, read from a handler on its own logger: in the whole suite an
    earlier test's logging setup may leave that logger out of caplog's reach."""
    said = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: said.append(record.getMessage())
    logger = logging.getLogger("dashboard.owner.leader")
    disabled, level = logger.disabled, logger.level
    logger.disabled = False
    logger.setLevel(logging.WARNING)
    logger.addHandler(handler)
    yield said
    logger.removeHandler(handler)
    logger.disabled = disabled
    logger.setLevel(level)


def test_a_standby_lets_the_leader_take_back_a_lease_redis_lost_with_its_term(key, leader_log):
    """FLUSHDB under a leader and its standby: the standby, which saw the lease held, finds it
    gone with its term and waits a lease period; the leader takes it back meanwhile."""
    client = redis_client(settings.REDIS_URL)
    a, b = lease(key, "a"), lease(key, "b")
    assert a.try_acquire()
    stop, won, tries = threading.Event(), [], []
    take = b.try_acquire

    emptied = threading.Event()

    def counted():          # a try the standby made, once it has found the lease held
        taken = take()
        tries.append(taken)
        # Redis is emptied between two tries, never during one (a try that began before
        # and ended after would find the lease free and take it: a race, not the case).
        emptied.wait(30)
        return taken
    b.try_acquire = counted
    waiter = threading.Thread(target=in_thread(lambda: b.wait(stop, poll=0.05)
                                               and won.append(b)))
    waiter.start()
    try:
        # Generous bounds: a loaded machine may starve the standby's thread for seconds.
        wait_for(lambda: tries, 30, "the standby to find the lease held")
        assert tries[0] is False
        client.delete(key, a.term_key)
        emptied.set()
        wait_for(lambda: any("vanished with its term" in said for said in leader_log), 30,
                 "the standby to find the lease gone with its term")
        assert a.renew() and a.holder().startswith("a:")
    finally:
        emptied.set()
        stop.set()
        waiter.join(5)
    assert won == [] and not a.lost.is_set()


def test_a_database_whose_term_went_back_still_lets_an_owner_lead(key):
    """A database restored from a backup (or a new one) has a lower term than Redis's copy:
    the taker holding the lease sets the copy to the database's term, the one that fences."""
    client = redis_client(settings.REDIS_URL)
    client.set(lease_term(key), 1_000)
    a = lease(key, "a")
    assert a.try_acquire() and a.term < 1_000
    assert int(client.get(a.term_key)) == a.term


def test_the_lease_is_renewed_while_the_new_leader_is_still_starting(key, monkeypatch):
    """Issue 26: building the owner and starting its decoder outlived the lease on a loaded
    machine, and the standby took over at every start. The watch command renews from the
    moment it holds the lease, so a start three lease periods long keeps it."""
    kept = []

    def slow_start(stop, redis, lease, probes=None, dump_signal=None):
        busy_until = time.monotonic() + 3.0
        while time.monotonic() < busy_until:      # starting, without a renewal of its own
            sum(range(10_000))
        kept.append(lease.held() and not other.try_acquire())
        stop.set()
    monkeypatch.setattr(runner, "run", slow_start)
    starting, other = lease(key, "starting", seconds=1.0), lease(key, "other", seconds=1.0)
    stop = threading.Event()
    thread = threading.Thread(target=in_thread(lambda: watch.Command().own_while_leading(
        stop, None, starting, watch.OwnerProbes(), "starting")))
    thread.start()
    thread.join(20)
    assert kept == [True]
    assert starting._renewing is None, "the renewal outlived the leadership"


def test_a_term_the_database_does_not_answer_for_gives_the_lease_back(key):
    """A database that accepts and answers nothing (issue 22, item 5): taking the term
    gives up within half the renew deadline and gives the lease back for another owner,
    rather than holding it, and this thread, for as long as the database hangs."""
    default = connections["default"]
    if default.vendor != "postgresql":
        pytest.skip("the deadline bounds PostgreSQL's sockets (DATABASE_URL=postgres://...)")
    saved = dict(default.settings_dict)
    target = (saved["HOST"] or "127.0.0.1", int(saved["PORT"] or 5432))
    with FaultProxy(target) as proxy:
        default.close()
        default.settings_dict.update(HOST="127.0.0.1", PORT=proxy.port)
        try:
            default.ensure_connection()
            proxy.set_mode(BLACKHOLE)
            a = lease(key, "a", seconds=3.0)        # renew deadline 2 s: 1 s for the term
            started = time.monotonic()
            with pytest.raises(OperationalError, match="no answer within 1 s"):
                a.try_acquire()
            assert time.monotonic() - started < 2.5
            assert not redis_client(settings.REDIS_URL).exists(key)
        finally:
            default.close()
            default.settings_dict.clear()
            default.settings_dict.update(saved)
