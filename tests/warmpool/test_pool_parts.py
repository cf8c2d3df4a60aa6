"""The ready queue, the reservation map, pod digests, options and the CAS patch."""
import pytest

from warmpool import ClaimOptions, ReadyQueue, Reservations, claim_patch, digest
from warmpool.metrics import LatencyHistogram
from warmpool.podstate import RUNNING, STOPPING

from tests.warmpool.poolkit import pod


def test_ready_queue_is_fifo_without_duplicates():
    ready = ReadyQueue()
    for name in ("a", "b", "c"):
        ready.observe(f"pools/{name}", pod(name))
    ready.observe("pools/a", pod("a", rv="7"))     # changed while queued: keeps its place
    assert ready.keys() == ["pools/a", "pools/b", "pools/c"]
    assert ready.pop().resource_version == "7"
    assert [ready.pop().name, ready.pop().name, ready.pop()] == ["b", "c", None]


@pytest.mark.parametrize("state", [pod("a", phase=RUNNING), pod("a", phase=STOPPING),
                                   pod("a", protected=True), None])
def test_ready_queue_drops_what_is_not_claimable(state):
    ready = ReadyQueue()
    ready.observe("pools/a", pod("a"))
    ready.observe("pools/a", state)
    assert len(ready) == 0


def test_ready_queue_skips_reserved_pods():
    ready = ReadyQueue()
    ready.observe("pools/a", pod("a"), reserved=True)
    assert "pools/a" not in ready


def test_reservations_expire_in_order_with_time_passed_in():
    res = Reservations(ttl=2.0)
    res.reserve("a", now=10.0)
    res.reserve("b", now=11.0)
    assert res.is_reserved("a", 11.9) and res.next_expiry() == 12.0
    assert res.expire(11.99) == []
    assert res.expire(12.0) == ["a"]
    res.reserve("b", now=12.5)                    # renewed: moves to the back
    assert res.expire(13.5) == [] and res.expire(14.5) == ["b"]
    assert not res.is_reserved("b", 14.5) and len(res) == 0
    with pytest.raises(ValueError):
        Reservations(ttl=0)


def test_digest_reads_pool_phase_protection_and_idle_time():
    obj = {"metadata": {"namespace": "pools", "name": "web-1", "resourceVersion": "42",
                        "labels": {"schedview.io/pool": "web", "schedview.io/phase": "Idle"},
                        "annotations": {"schedview.io/idle-since": "17.5",
                                        "schedview.io/scale-down-protected": "true"}}}
    p = digest(obj)
    assert (p.key, p.pool, p.phase, p.resource_version, p.idle_since, p.protected) == (
        "pools/web-1", "web", "Idle", "42", 17.5, True)
    assert not p.claimable
    assert digest({"metadata": {"namespace": "x", "name": "y", "labels": {}}}) is None
    assert digest({"metadata": "nonsense"}) is None


@pytest.mark.parametrize("options, message", [
    ({"labels": {"bad key!": "x"}}, "not a valid key"),
    ({"labels": {"app": "no spaces"}}, "not a valid label value"),
    ({"labels": {"schedview.io/phase": "Idle"}}, "belongs to the pool scheduler"),
    ({"annotations": {"schedview.io/claim": "x"}}, "belongs to the pool scheduler"),
    ({"container_images": {"Main": "nginx"}}, "not a container name"),
    ({"container_images": {"main": " "}}, "no image"),
    ({"labels": {"a": 1}}, "map strings to strings"),
    ({"target_phase": "Idle"}, "target_phase"),
])
def test_bad_options_are_refused(options, message):
    with pytest.raises(ValueError, match=message):
        ClaimOptions(**options)


def test_claim_patch_is_a_cas_on_the_seen_version():
    options = ClaimOptions(container_images={"main": "nginx:2"}, labels={"app": "a"},
                           annotations={"who": "me"})
    patch = claim_patch(pod("web-1", rv="42"), options, "c1")
    assert patch == {"metadata": {"resourceVersion": "42",
                                  "labels": {"app": "a", "schedview.io/phase": "Running"},
                                  "annotations": {"who": "me", "schedview.io/claim": "c1"}},
                     "spec": {"containers": [{"name": "main", "image": "nginx:2"}]}}


def test_latency_histogram_quantiles():
    hist = LatencyHistogram()
    assert hist.quantile(0.5) is None
    for seconds in [0.0005] * 98 + [0.03, 9.0]:
        hist.observe(seconds)
    assert hist.quantile(0.5) == 0.001
    assert hist.quantile(0.99) == 0.05
    assert hist.counts[-1] == 1 and hist.total == 100
