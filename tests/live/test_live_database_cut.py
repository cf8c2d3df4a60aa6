"""A 20 s database cut under two owners and churn (issue 22, item 2), every part a real
process on a PostgreSQL and a Redis of the test's own: afterwards exactly one owner leads
within a bound, the lease's term grew by a few (no release and re-take loop), reap
commands are served again at once, everything published is in the history, and the
pages' rows equal the cluster; a bind queued under a killed leader's term is refused by
the worker (issue 22, item 1). Prints the time without an owner and the owner's answers
during the cut (bench/README.md keeps them)."""
import re
import subprocess
import sys
import threading
import time
from datetime import datetime, timedelta

import psycopg
import pytest
from django.test import override_settings
from kubernetes import client, config

from dashboard.celery import app
from dashboard.clients.owner_client import send
from dashboard.runtime.redis_urls import celery_url, redis_settings
from dashboard.wire.commands import CommandError
from dashboard.wire.tasks import BIND_PODS
from tests.live.livestack import (
    ROOT,
    Stack,
    child_env,
    cluster_pods,
    new_pod,
    rows_against_cluster,
    synced_owner,
)
from tests.live.private_services import PrivatePostgres, PrivateRedis
from tests.live.test_live_fencing import Browser, history_matches
from tests.waiting import wait_for

pytestmark = pytest.mark.timeout(300)

CUT = 20.0
# The owners' lease: shorter than client-go's defaults, so the test is short.
LEASE, RENEW_DEADLINE, RETRY = 5.0, 4.0, 1.0
LEADS_AGAIN = 60.0       # seconds after the database is back within which one owner leads
# seconds after the leader synced within which reaps are served again: the writer's
# retry of what waited through the cut may still hold the owner's thread once or twice
REAPS_AGAIN = 10.0
TERMS = 4                # takings the cut may cost, at most (a loop took 98 in 100 s)
DROPPED = re.compile(r"^(\S+ \S+) .*dropped command \S+ \(reap by reaper\)", re.M)


@pytest.fixture
def cut_stack(transactional_db, tmp_path):
    database, redis = PrivatePostgres(), PrivateRedis(tmp_path)
    try:
        database.init()
        redis.start()
        kubeconfig = tmp_path / "kubeconfig"
        env = dict(child_env(tmp_path, redis.url, kubeconfig, cache_ttl=2, reap_period=0.5,
                             compare_period=3600, lease_duration=LEASE,
                             lease_renew_deadline=RENEW_DEADLINE, lease_retry_period=RETRY),
                   DATABASE_URL=database.url)
        subprocess.run([sys.executable, "manage.py", "migrate", "--no-input"], cwd=ROOT,
                       env=env, check=True, capture_output=True, timeout=180)
        stack = Stack(tmp_path, env)
        try:
            with override_settings(**redis_settings(redis.url)):
                stack.cluster(kubeconfig, "--nodes", "6", "--pods", "60", "--zones", "2",
                              "--bookmark-interval", "1")
                stack.celery()
                yield stack, database, redis
        finally:
            stack.stop_all()
    finally:
        redis.stop()
        database.remove()


class StatusPoller:
    """Asks the owner for its status every 0.2 s from a thread of its own, recording
    (monotonic time, answered) per ask."""

    def __init__(self):
        self.asks = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.wait(0.2):
            try:
                answered = bool(send("status", timeout=1.0))
            except CommandError:
                answered = False
            self.asks.append((time.monotonic(), answered))

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join(10)

    def between(self, start, end):
        return [ok for at, ok in self.asks if start <= at < end]

    def longest_silence(self):
        """The longest stretch, in seconds, between two answered asks."""
        answered = [at for at, ok in self.asks if ok]
        return max((b - a for a, b in zip(answered, answered[1:])), default=0.0)


def query(database, sql, *args):
    with psycopg.connect(database.url.replace("postgres://", "postgresql://")) as db:
        return db.execute(sql, args).fetchall()


def term(database):
    return query(database, "SELECT term FROM dashboard_leaseterm WHERE id = 1")[0][0]


def pod_rows(database):
    return {uid: (state, node) for uid, state, node in
            query(database, "SELECT uid, state, node FROM dashboard_podrecord")}


def owners(stack):
    return [name for name in stack.processes if name.startswith("owner-")]


def leaders(stack):
    """The running owners whose last word is leading."""
    return [name for name in owners(stack)
            if stack.log(name).rfind("leader; owning the cache")
            > stack.log(name).rfind("waiting for the leader lease")]


def dropped_reaps_after(stack, moment: datetime):
    return [at for name in owners(stack) for at in DROPPED.findall(stack.log(name))
            if datetime.strptime(at, "%Y-%m-%d %H:%M:%S,%f") > moment]


@pytest.mark.parametrize("leader_killed", [False, True], ids=["leader-rides-it-out",
                                                             "leader-killed-in-it"])
def test_two_owners_recover_from_a_database_cut_by_themselves(cut_stack, leader_killed):
    """The leader rides the cut out (its writes wait), or is killed 5 s into it and
    restarted at once (as `up` would): then the standby, whose connections the cut broke,
    and the restarted owner contend while the database is down, and one leads once it is
    back (the issue's case: the next leader failed every second and re-took the lease)."""
    stack, database, redis = cut_stack
    stack.owner("owner-a")
    synced_owner()
    stack.owner("owner-b")
    wait_for(lambda: "waiting for the leader lease" in stack.log("owner-b"), 30, "the standby")
    browser = Browser().join()
    stack.control("churn", {"rate": 20, "scheduler": True})
    wait_for(lambda: len(browser.messages) > 5, 30, "churn reaching the browsers")
    term_before = term(database)
    poller = StatusPoller().start()
    try:
        database.stop()
        cut_at = time.monotonic()
        while time.monotonic() < cut_at + CUT:       # the cut itself, watched throughout
            if leader_killed and "owner-a" in stack.processes and \
                    time.monotonic() > cut_at + 5:
                stack.stop("owner-a", "kill")
                stack.owner("owner-c")
            for name in owners(stack):
                assert stack.processes[name].poll() is None, stack.log(name)[-3000:]
            time.sleep(0.2)
        database.start()
        back_at = time.monotonic()

        wait_for(synced_owner, LEADS_AGAIN, "a synced owner after the cut")
        leading_after, synced_wall = time.monotonic() - back_at, datetime.now()
        wait_for(lambda: len(leaders(stack)) == 1, 10, "exactly one owner leading")
        # It keeps leading: no release and re-take loop.
        leader = leaders(stack)[0]
        steady_from = time.monotonic()
        while time.monotonic() < steady_from + 3 * LEASE:
            assert leaders(stack) == [leader], [stack.log(n)[-3000:] for n in owners(stack)]
            time.sleep(0.5)
    finally:
        poller.stop()
    grown = term(database) - term_before
    assert int(leader_killed) <= grown <= TERMS, f"the term grew by {grown} through the cut"
    # Reaps were dropped while nobody could serve them, and not REAPS_AGAIN s after a
    # leader was synced again (not minutes, as in the issue).
    late = dropped_reaps_after(stack, synced_wall + timedelta(seconds=REAPS_AGAIN))
    assert late == [], late

    seq = max(e["seq"] for e in browser.events())
    wait_for(lambda: max(e["seq"] for e in browser.events()) > seq + 10, 30,
             "the leader publishing after the cut")
    stack.control("churn", {"rate": 0})
    browser.close()
    stored = {seq: (kind, key) for seq, kind, key in query(
        database, "SELECT seq, kind, key FROM dashboard_transition WHERE seq = ANY(%s)",
        [e["seq"] for e in browser.events()])}
    assert history_matches(browser.events(), stored) == []
    wait_for(lambda: not rows_against_cluster(pod_rows(database), cluster_pods(stack)), 30,
             "the pages' rows to equal the cluster")

    if leader_killed:
        # A bind queued under the killed leader's term and delivered only now is for an
        # assumption nobody holds: the worker refuses it before posting; one under the
        # current term binds.
        api = client.CoreV1Api(config.new_client_from_config(
            config_file=stack.env["SCHEDVIEW_KUBECONFIG"]))
        node = api.list_node().items[0].metadata.name
        stale, fresh = new_pod(api, "stale-bind"), new_pod(api, "fresh-bind")
        def send():
            with app.connection_for_write(celery_url(redis.url)) as connection:
                for uid, name, of_term in ((stale, "stale-bind", term_before),
                                           (fresh, "fresh-bind", term(database))):
                    app.send_task(BIND_PODS, args=([[uid, "default", name, node]],),
                                  kwargs={"term": of_term}, connection=connection)
        # From a thread of its own: Celery keeps the result backend it makes per thread,
        # and this one names the test's private Redis, gone when the test ends.
        sender = threading.Thread(target=send)
        sender.start()
        sender.join()
        wait_for(lambda: f"refused 1 bind(s) of lease term {term_before}" in stack.log("worker"),
                 30, "the worker to refuse the stale bind")
        wait_for(lambda: cluster_pods(stack).get(fresh) == node, 30, "the current term's bind")
        assert cluster_pods(stack)[stale] == ""

    during = poller.between(cut_at, back_at)
    print(f"\ndatabase cut {CUT:g} s, leader {'killed' if leader_killed else 'kept'}: "
          f"owner status answered {sum(during)}/{len(during)} during the cut; one owner synced {leading_after:.1f} s after the database was "
          f"back; longest time without an owner's answer {poller.longest_silence():.1f} s; "
          f"term +{grown}")
