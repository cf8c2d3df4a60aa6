"""The simulated cluster's warm pools and its update-conflict fault, over real HTTP."""
import orjson
import pytest
from kubernetes.client.exceptions import ApiException

from warmpool.podstate import CLAIM_ANNOTATION, IDLE_SINCE_ANNOTATION, PHASE_LABEL, POOL_LABEL


def labels(sim, name):
    return sim.pod("warm-pools", name)["metadata"]["labels"]


def test_pools_are_idle_bound_pods_with_the_pool_labels(sim, v1):
    keys = sim.pools.create("web", 3)
    assert keys == [f"warm-pools/web-000{i}" for i in range(3)]
    listed = v1.list_pod_for_all_namespaces(label_selector=f"{POOL_LABEL}=web").items
    assert sorted(p.metadata.name for p in listed) == ["web-0000", "web-0001", "web-0002"]
    for pod in listed:
        assert pod.metadata.labels[PHASE_LABEL] == "Idle" and pod.spec.node_name
        assert float(pod.metadata.annotations[IDLE_SINCE_ANNOTATION]) > 0
    assert sim.pools.create("web", 1) == ["warm-pools/web-0003"]


def test_a_cas_patch_with_a_stale_resource_version_is_409(sim, v1):
    sim.pools.create("web", 1)
    pod = v1.read_namespaced_pod("web-0000", "warm-pools")
    stale = pod.metadata.resource_version
    v1.patch_namespaced_pod("web-0000", "warm-pools", {"metadata": {"labels": {"a": "b"}}})
    with pytest.raises(ApiException) as error:
        v1.patch_namespaced_pod("web-0000", "warm-pools", {"metadata": {
            "resourceVersion": stale, "labels": {PHASE_LABEL: "Running"}}})
    assert error.value.status == 409
    assert labels(sim, "web-0000")[PHASE_LABEL] == "Idle"


def test_the_conflict_fault_fails_client_updates_and_leaves_the_pod(sim, v1):
    sim.pools.create("web", 1)
    before = sim.pod("warm-pools", "web-0000")
    sim.faults.update(update_conflict_rate=1.0)
    with pytest.raises(ApiException) as error:
        v1.patch_namespaced_pod("web-0000", "warm-pools",
                                {"metadata": {"labels": {PHASE_LABEL: "Running"}}})
    assert error.value.status == 409 and "the object has been modified" in error.value.body
    assert sim.pod("warm-pools", "web-0000") == before
    v1.read_namespaced_pod("web-0000", "warm-pools")           # reads are never failed
    sim.faults.update(update_conflict_rate=0.0)
    v1.patch_namespaced_pod("web-0000", "warm-pools", {"metadata": {"labels": {"a": "b"}}})


def test_claimed_pods_come_back_idle_after_hold_and_stop_delay(sim):
    sim.pools.create("web", 1)
    sim.pools.update(hold=5, stop_delay=2)
    sim.api.patch("pods", "warm-pools/web-0000", "application/merge-patch+json",
                  {"metadata": {"labels": {PHASE_LABEL: "Running", "team": "a"},
                                "annotations": {CLAIM_ANNOTATION: "c1", "note": "x"}}}, "test")
    assert sim.pools.step(now=100) == 0                       # claimed: seen at 100
    assert sim.pools.step(now=104.9) == 0
    assert sim.pools.step(now=105) == 1 and labels(sim, "web-0000")[PHASE_LABEL] == "Stopping"
    assert sim.pools.step(now=106.9) == 0
    assert sim.pools.step(now=107) == 1
    pod = sim.pod("warm-pools", "web-0000")
    assert pod["metadata"]["labels"][PHASE_LABEL] == "Idle"
    assert pod["metadata"]["annotations"] == {IDLE_SINCE_ANNOTATION: "107.000"}
    assert "team" not in pod["metadata"]["labels"]              # the claim's own labels go
    assert pod["metadata"]["labels"][POOL_LABEL] == "web"
    assert sim.pools.knobs()["recycled"] == 1


def test_a_deleted_pool_pod_is_replaced(sim):
    sim.pools.create("web", 2)
    sim.api.delete_pod("warm-pools", "web-0001", 0)
    assert sim.pools.step() == 1
    assert sim.pod("warm-pools", "web-0001")["metadata"]["labels"][PHASE_LABEL] == "Idle"


def test_pools_control_endpoint(sim, raw):
    resp, data = raw.call("POST", "/simcluster/v1/pools", {"create": {"batch": 2}, "hold": 3})
    body = orjson.loads(data)
    assert resp.status == 200 and body["pools"] == {"batch": 2} and body["hold"] == 3.0
    resp, _ = raw.call("POST", "/simcluster/v1/pools", {"bogus": 1})
    assert resp.status == 400 and len(sim.pods("warm-pools")) == 2
    resp, data = raw.call("POST", "/simcluster/v1/faults", {"update_conflict_rate": 0.3})
    assert resp.status == 200 and orjson.loads(data)["update_conflict_rate"] == 0.3
