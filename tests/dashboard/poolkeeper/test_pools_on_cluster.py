"""Pool schedulers on a simulated cluster over real HTTP: the pool pods listed and
watched by the Reflector, claims as strategic merge patches with resourceVersion."""
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from kubernetes import client

from simcluster import SimCluster
from simcluster.generate import generate_cluster
from simcluster.patch import MERGE
from warmpool import ClaimOptions, ClaimRequest, ClaimWaiter, PoolScheduler
from warmpool.podstate import CLAIM_ANNOTATION, PHASE_LABEL, POOL_LABEL, RUNNING

from dashboard.poolkeeper.claimer import ApiClaimer
from dashboard.poolkeeper.feed import PoolFeed, pool_reflector
from tests.waiting import wait_for

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def nodes_only():
    return generate_cluster(nodes=5, pods=0, zones=1, seed=3, namespaces=1)


@pytest.fixture
def sim(nodes_only):
    with SimCluster(cluster=nodes_only, kubelet=False, namespaces=1) as s:
        yield s


class Pools:
    """The pools process's parts in this process: reflector, feed, one scheduler per pool."""

    def __init__(self, sim, watch_list=False, **scheduler_options):
        config = client.Configuration(host=sim.url)
        self.claimer = ApiClaimer(config)
        self.options = scheduler_options
        self.feed = PoolFeed(self._make)
        self.stop = threading.Event()
        self.reflector = pool_reflector(client.CoreV1Api(client.ApiClient(config)), self.feed,
                                        self.stop, watch_list=watch_list)
        self.reflector.start()
        assert self.feed.synced.wait(10)

    def _make(self, pool, members):
        return PoolScheduler(pool, members, self.claimer, **self.options).start()

    def claim(self, pool, timeout=10.0, **options):
        waiter = ClaimWaiter()
        scheduler = self.feed.scheduler(pool)
        request = ClaimRequest(ClaimOptions(**options), scheduler.clock() + timeout, waiter)
        assert scheduler.enqueue(request)
        return waiter

    def close(self):
        for scheduler in self.feed.schedulers.values():
            scheduler.shutdown()
        self.stop.set()
        self.reflector.stop()


@pytest.fixture
def pools(sim):
    made = []

    def start(**options):
        made.append(Pools(sim, **options))
        return made[-1]
    yield start
    for p in made:
        p.close()


def claimed_pods(sim):
    return {p["metadata"]["name"]: p["metadata"]["annotations"][CLAIM_ANNOTATION]
            for p in sim.pods("warm-pools")
            if CLAIM_ANNOTATION in (p["metadata"].get("annotations") or {})}


def idle_members(pools, pool, count):
    wait_for(lambda: len(pools.feed.scheduler(pool).members) == count, 10, f"{count} members")


@pytest.mark.parametrize("watch_list", [False, True], ids=["paged-list", "watch-list"])
def test_a_claim_is_a_cas_that_lands_on_the_cluster(sim, pools, watch_list):
    """Listed by pages or through the watch (the pools process's SCHEDVIEW_WATCH_LIST, as
    the owner's decoder lists: capture 58)."""
    sim.pools.create("web", 3)
    p = pools(watch_list=watch_list)
    idle_members(p, "web", 3)
    assert p.reflector.stats["watch_lists"] == int(watch_list)
    result = p.claim("web", container_images={"main": "nginx:1.27"}, labels={"team": "a"}).wait(10)
    assert result.ok and result.key == "warm-pools/web-0000"      # the longest idle
    pod = sim.pod("warm-pools", "web-0000")
    assert pod["metadata"]["labels"][PHASE_LABEL] == RUNNING
    assert pod["metadata"]["labels"]["team"] == "a"
    assert pod["spec"]["containers"][0]["image"] == "nginx:1.27"
    assert result.pod["metadata"]["resourceVersion"] == pod["metadata"]["resourceVersion"]
    scheduler = p.feed.scheduler("web")
    wait_for(lambda: scheduler.members.get("warm-pools/web-0000").phase == RUNNING, 10,
             "the claim back through the watch")
    assert scheduler.status()["idle_ready"] == 2


def test_a_stale_version_conflicts_and_the_claim_takes_the_next_pod(sim, pools):
    sim.pools.create("web", 2)
    p = pools()
    idle_members(p, "web", 2)
    p.reflector.stop()                          # the watch lags: web-0000 changes unseen
    sim.api.patch("pods", "warm-pools/web-0000", MERGE,
                  {"metadata": {"labels": {"touched": "yes"}}}, "someone")
    result = p.claim("web").wait(10)
    assert result.ok and result.key == "warm-pools/web-0001" and result.attempts == 2
    scheduler = p.feed.scheduler("web")
    assert scheduler.metrics.outcomes["retriable"] == 1
    assert scheduler.reservations.is_reserved("warm-pools/web-0000", scheduler.clock())
    assert "touched" not in sim.pod("warm-pools", "web-0001")["metadata"]["labels"]


def test_a_hard_error_releases_the_pod(sim, pools):
    sim.pools.create("web", 1)
    p = pools()
    idle_members(p, "web", 1)
    result = p.claim("web", container_images={"sidecar": "x:1"}).wait(10)   # no such container
    assert not result.ok and result.outcome == "hard" and "HTTP 422" in result.error
    scheduler = p.feed.scheduler("web")
    assert scheduler.ready.keys() == ["warm-pools/web-0000"]
    assert p.claim("web").wait(10).ok


def test_requests_wait_for_pods_to_turn_idle(sim, pools):
    sim.pools.create("web", 1)
    p = pools()
    idle_members(p, "web", 1)
    assert p.claim("web").wait(10).ok
    waiting = p.claim("web", timeout=20)
    assert waiting.wait(0.3) is None
    sim.pools.hold, sim.pools.stop_delay = 0.01, 0.01
    sim.pools.step()                            # Running -> Stopping after its hold
    sim.pools.step(sim.api.clock() + 1)
    sim.pools.step(sim.api.clock() + 2)         # Stopping -> Idle
    result = waiting.wait(10)
    assert result.ok and result.key == "warm-pools/web-0000"


def test_500_concurrent_requests_on_100_idle_pods_claim_each_pod_once(sim, pools):
    sim.pools.create("web", 100)
    p = pools(capacity=1000)
    idle_members(p, "web", 100)
    with ThreadPoolExecutor(50) as callers:
        waiters = list(callers.map(lambda _: p.claim("web", timeout=8), range(500)))
    results = [w.wait(20) for w in waiters]
    won = [r for r in results if r.ok]
    assert len(won) == 100
    assert len({r.key for r in won}) == 100
    assert all(r.outcome == "expired" for r in results if not r.ok)
    on_cluster = claimed_pods(sim)
    assert len(on_cluster) == 100 and len(set(on_cluster.values())) == 100


def test_stress_with_30_percent_conflicts(sim, pools):
    sim.pools.create("web", 300)
    p = pools(capacity=1000)
    idle_members(p, "web", 300)
    sim.faults.update(update_conflict_rate=0.3)
    with ThreadPoolExecutor(20) as callers:
        waiters = list(callers.map(lambda _: p.claim("web", timeout=20), range(150)))
    results = [w.wait(30) for w in waiters]
    assert all(r.ok for r in results), [r.error for r in results if not r.ok][:3]
    assert len({r.key for r in results}) == 150
    outcomes = p.feed.scheduler("web").metrics.outcomes
    assert outcomes["success"] == 150 and 20 <= outcomes["retriable"] <= 150
    on_cluster = claimed_pods(sim)
    assert len(on_cluster) == 150
    assert set(on_cluster.values()) == {r.pod["metadata"]["annotations"][CLAIM_ANNOTATION]
                                        for r in results}


def test_shutdown_fails_waiting_requests_with_no_idle_pods(sim, pools):
    sim.pools.create("web", 1)
    p = pools()
    idle_members(p, "web", 1)
    assert p.claim("web").wait(10).ok
    waiting = [p.claim("web", timeout=30) for _ in range(3)]
    assert p.feed.scheduler("web").shutdown(timeout=10)
    assert [w.wait(5).error for w in waiting] == ["pool 'web' is shutting down: no idle pods"] * 3


def test_pods_leaving_the_pool_leave_its_members(sim, pools):
    sim.pools.create("web", 2)
    p = pools()
    idle_members(p, "web", 2)
    sim.api.patch("pods", "warm-pools/web-0001", MERGE,
                  {"metadata": {"labels": {POOL_LABEL: "batch"}}}, "someone")
    wait_for(lambda: len(p.feed.scheduler("batch").members) == 1, 10, "the move")
    assert len(p.feed.scheduler("web").members) == 1
    sim.api.delete_pod("warm-pools", "web-0000", 0)
    idle_members(p, "web", 0)


def test_protected_pods_are_skipped_and_expired_requests_touch_nothing(sim, pools):
    sim.pools.create("web", 2)
    sim.api.patch("pods", "warm-pools/web-0000", MERGE, {"metadata": {"annotations": {
        "schedview.io/scale-down-protected": "true"}}}, "someone")
    p = pools()
    idle_members(p, "web", 2)
    late = p.claim("web", timeout=-1).wait(10)
    assert late.outcome == "expired" and claimed_pods(sim) == {}
    result = p.claim("web").wait(10)
    assert result.ok and result.key == "warm-pools/web-0001"
    assert list(claimed_pods(sim)) == ["web-0001"]
