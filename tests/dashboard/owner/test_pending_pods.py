"""The owner's pending pods: kept digested, thawed on each read, ordered without a thaw."""
import pytest

from schedcache.podinfo import make_pod_info
from scheduling.diagnosis import claim_keys
from scheduling.queue_sort import queue_key
from simcluster.generate import make_pod

from dashboard.owner.pending_pods import PendingPods
from dashboard.owner.pending_reasons import signature

BIND_INFO = {"schedview.io/bind-info": '{"node": "n1"}'}


def pod(name, **kwargs):
    return make_pod(name, namespace="team-a", uid=f"uid-{name}", requests={"cpu": "1"},
                    **kwargs)


@pytest.fixture
def pending():
    pods = PendingPods()
    pods.put(make_pod_info(pod("low", priority=1)), None)
    claimed = pod("claimed", priority=9)
    claimed["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "d"}}]
    claimed["status"]["nominatedNodeName"] = "n1"
    pods.put(make_pod_info(claimed), BIND_INFO)
    return pods


def test_a_read_thaws_a_fresh_mapping(pending):
    first = pending["uid-low"]
    first["metadata"]["name"] = "changed by a reader"
    assert pending["uid-low"]["metadata"]["name"] == "low"
    assert pending.get("uid-claimed")["metadata"]["annotations"] == BIND_INFO
    assert pending.get("uid-gone") is None


def test_each_entry_holds_its_queue_order_and_claims_as_read_from_the_pod(pending):
    for entry in pending.entries():
        thawed = pending[entry.info.key]
        assert entry.order == queue_key(thawed) and entry.claims == tuple(claim_keys(thawed))
        assert entry.signature == hash(signature(thawed))
        assert entry.nominated == (thawed.get("status") or {}).get("nominatedNodeName", "")
    assert sorted(entry.info.name for entry in pending.entries()) == ["claimed", "low"]
    assert min(pending.entries(), key=lambda entry: entry.order).info.name == "claimed"
    assert [e.claims for e in pending.entries() if e.info.name == "claimed"] == [
        (("team-a", "d"),)]


def test_a_pod_is_found_by_uid_and_by_name_until_it_leaves(pending):
    assert "uid-low" in pending and len(pending) == 2 and set(pending) == {"uid-low",
                                                                          "uid-claimed"}
    assert pending.uid_named("team-a", "low") == "uid-low"
    assert pending.pop("uid-low").info.key == "uid-low"
    assert pending.pop("uid-low") is None
    assert "uid-low" not in pending and pending.uid_named("team-a", "low") is None
    assert len(pending) == 1


def test_a_pod_without_a_name_still_queues():
    nameless = pod("nameless")
    del nameless["metadata"]["name"]
    pending = PendingPods()
    pending.put(make_pod_info(nameless), None)
    assert [entry.order for entry in pending.entries()] == [(0, "", "team-a", "")]


def test_pods_alike_share_a_signature():
    pending = PendingPods()
    for name in ("twin-1", "twin-2"):
        pending.put(make_pod_info(pod(name, labels={"app": "twin"})), None)
    pending.put(make_pod_info(pod("other", labels={"app": "other"})), None)
    signatures = {name: pending.entry(f"uid-{name}").signature
                  for name in ("twin-1", "twin-2", "other")}
    assert signatures["twin-1"] == signatures["twin-2"]
    assert signatures["other"] != signatures["twin-1"]
    assert pending.entry("uid-gone") is None
