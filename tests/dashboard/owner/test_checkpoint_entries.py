"""A checkpoint's pod entries: made once per distinct request and shared, the same as made
one pod at a time, and nothing kept of requests a checkpoint no longer meets."""
from schedcache.podinfo import make_pod_info
from schedcache.resource import Resource

from dashboard.owner.checkpoints import PodEntries
from dashboard.readmodel.cluster_state import ClusterState, pod_entries


def _pod(uid, cpu="100m", priority=0):
    return {"metadata": {"uid": uid, "name": uid, "namespace": "team"},
            "spec": {"nodeName": "n0", "priority": priority,
                     "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}


def _info(uid, **kwargs):
    return make_pod_info(_pod(uid, **kwargs))


def test_pods_asking_alike_share_one_entry_equal_to_a_fresh_one():
    entries = PodEntries()
    a, b = _info("a"), _info("b")
    assert a.requested is b.requested         # the digest shares the Resource
    assert entries(a) is entries(b)
    assert entries(a) == pod_entries(a)


def test_equal_requests_in_other_objects_or_another_priority_are_told_apart():
    entries = PodEntries()
    a = _info("a")
    b = _info("b", priority=7)
    c = _info("c", cpu="250m")
    assert entries(b) == pod_entries(b) and entries(b)[2] == 7
    assert entries(_info("d"))[2] == 0          # b's requests, another priority
    assert entries(c) == pod_entries(c) and entries(c)[0][0] == 250
    a.requested = Resource(a.requested.milli_cpu)      # equal amounts, another object
    assert entries(a) == pod_entries(a)


def test_a_checkpoint_forgets_the_requests_it_did_not_meet():
    entries = PodEntries()
    small, large = _info("small"), _info("large", cpu="2")
    entries(small), entries(large)
    entries.done()
    first = entries(small)
    entries.done()
    assert entries(small) is first            # met again: kept
    assert len(entries._last) == 1            # the large request's entry is gone
    entries.done()
    assert len(entries._last) == 1


def test_a_state_captured_with_shared_entries_equals_one_made_pod_by_pod():
    from schedcache import Cache
    cache = Cache(ttl=0)
    cache.add_node({"metadata": {"name": "n0", "labels": {}},
                    "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}})
    for i in range(20):
        cache.add_pod(_pod(f"p{i}", cpu=("100m", "1")[i % 2], priority=i % 3))
    infos = cache.get_node_name_to_info_map()
    zones = [("", ["n0"])]
    shared = ClusterState.captured(5, infos, {}, zones, PodEntries())
    plain = ClusterState.captured(5, infos, {}, zones)
    assert shared.pods == plain.pods and shared.sums == plain.sums
