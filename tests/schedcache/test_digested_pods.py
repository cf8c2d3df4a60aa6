"""Pods digested elsewhere (the feed's decoder process): pack_pod_info / unpack_pod_info
carry a PodInfo across a process boundary as plain values, and add_pod_info /
update_pod_info take it; the cache must end exactly as with add_pod / update_pod."""
import marshal

import pytest

from schedcache import Cache, CacheCorruptedError, CacheError
from schedcache.podinfo import make_pod_info, pack_pod_info, unpack_pod_info
from simcluster.generate import make_pod

import tests.schedcache.builders as b

SLOTS = ("key", "namespace", "name", "node_name", "resource_version", "phase", "priority",
         "labels", "host_ports", "has_affinity", "has_required_anti_affinity", "pvc_keys")


def rich_pod(name="web", node="node-1", app="web"):
    return b.pod(name, node, cpu="250m", memory="64Mi", extra={"nvidia.com/gpu": "1"},
                 ports=[b.port(8080)], labels={"app": app, "tier": "front"},
                 affinity=b.pod_anti_affinity_required(), pvcs=["data"])


def crossed(pod):
    """make_pod_info here, then through marshal as the decoder's pipe carries it."""
    return unpack_pod_info(marshal.loads(marshal.dumps(pack_pod_info(make_pod_info(pod)))))


def test_a_packed_pod_info_comes_back_equal():
    pod = rich_pod()
    original, back = make_pod_info(pod), crossed(pod)
    assert {s: getattr(back, s) for s in SLOTS} == {s: getattr(original, s) for s in SLOTS}
    assert back.requested == original.requested
    assert back.non_zero_requested == original.non_zero_requested
    assert back.requested.scalar_resources == {"nvidia.com/gpu": 1}
    assert back.pod == original.pod
    assert back.host_ports and back.pvc_keys and back.has_required_anti_affinity


def test_unpacked_pods_share_requests_and_labels():
    one, two = crossed(rich_pod("a")), crossed(rich_pod("b"))
    assert one.requested is two.requested and one.labels is two.labels
    assert crossed(rich_pod("c", app="db")).labels is not one.labels


def test_pods_with_one_label_set_share_one_dict_the_table_keeps_by_hash(monkeypatch):
    """The sharing table holds each set's dict under the set's hash, no copy of its pairs;
    the same set in another order shares it too; a set whose hash another set holds gets a
    dict of its own with its own labels."""
    from schedcache import podinfo
    monkeypatch.setattr(podinfo, "_label_sets", {})
    one = make_pod_info(rich_pod("a"))
    reordered = rich_pod("b")
    reordered["metadata"]["labels"] = {"tier": "front", "app": "web"}
    assert make_pod_info(reordered).labels is one.labels
    assert crossed(rich_pod("c")).labels is one.labels
    assert podinfo._label_sets == {hash(frozenset(one.labels.items())): one.labels}
    clash = rich_pod("d", app="db")
    planted = {"app": "other"}
    podinfo._label_sets[hash(frozenset(clash["metadata"]["labels"].items()))] = planted
    labels = make_pod_info(clash).labels
    assert labels == {"app": "db", "tier": "front"} and labels is not planted


def test_sets_no_pod_holds_are_swept_out_and_the_living_keep_their_one_dict(monkeypatch):
    """However many sets come and go (pods relabelled one by one carry one each), the table
    holds at most its bound, and a set some pod holds keeps its one dict; while more sets
    are alive than the bound allows, none is dropped: the bound grows."""
    from schedcache import podinfo
    monkeypatch.setattr(podinfo, "_label_sets", {})
    monkeypatch.setattr(podinfo, "_label_sets_bound", 4)
    kept = make_pod_info(rich_pod("kept"))
    for n in range(200):
        relabelled = make_pod_info(rich_pod(f"p{n}", app=f"churn-{n}"))
        assert len(podinfo._label_sets) <= 4
        del relabelled
    assert kept.labels in podinfo._label_sets.values() and podinfo._label_sets_bound == 4
    assert make_pod_info(rich_pod("again")).labels is kept.labels
    alive = [make_pod_info(rich_pod(f"a{n}", app=f"alive-{n}")) for n in range(20)]
    assert podinfo._label_sets_bound == 32
    assert all(make_pod_info(rich_pod(f"b{n}", app=f"alive-{n}")).labels is info.labels
               for n, info in enumerate(alive))


def nodes_view(cache):
    return {name: (info.requested, info.non_zero_requested, len(info.pods),
                   len(info.used_ports), dict(info.pvc_ref_counts),
                   len(info.pods_with_required_anti_affinity))
            for name, info in cache.get_node_name_to_info_map().items()}


def test_add_and_update_pod_info_leave_the_cache_as_add_and_update_pod():
    pods = [rich_pod("a"), b.pod("b", "node-2", cpu="1"), b.pod("c", "node-1", memory="1Gi")]
    by_mapping, by_info = Cache(ttl=0), Cache(ttl=0)
    events = {id(c): [] for c in (by_mapping, by_info)}
    for cache in (by_mapping, by_info):
        cache.add_node(b.node("node-1", cpu="8"))
        cache.add_node(b.node("node-2", cpu="8"))
        cache.subscribe(lambda e, c=cache: events[id(c)].append((e.kind, e.key, e.node)))
    by_mapping.assume_pod(pods[2])
    by_info.assume_pod(pods[2])
    for pod in pods:
        by_mapping.add_pod(pod)
        by_info.add_pod_info(crossed(pod))
    newer = b.new_version(pods[1], cpu="2")
    by_mapping.update_pod(pods[1], newer)
    by_info.update_pod_info(crossed(newer))
    assert nodes_view(by_info) == nodes_view(by_mapping)
    assert by_info.get_pod(newer) == by_mapping.get_pod(newer)
    assert events[id(by_info)] == events[id(by_mapping)]
    assert [e[0] for e in events[id(by_info)]].count("pod_confirmed") == 1


def test_digested_pods_are_refused_like_mappings_and_change_nothing():
    cache = Cache(ttl=0)
    cache.add_node(b.node("node-1"))
    added = b.pod("a", "node-1", cpu="1")
    cache.add_pod_info(crossed(added))
    before = nodes_view(cache)
    with pytest.raises(CacheError, match="no spec.nodeName"):
        cache.add_pod_info(crossed(b.pod("unbound", None)))
    with pytest.raises(CacheError, match="already in added state"):
        cache.add_pod_info(crossed(added))
    with pytest.raises(CacheError, match="not added"):
        cache.update_pod_info(crossed(b.pod("never", "node-1")))
    with pytest.raises(CacheCorruptedError):
        cache.update_pod_info(crossed(b.on_node(b.new_version(added), "node-2")))
    assert nodes_view(cache) == before and cache.pod_count() == 1


def test_tolerations_are_kept_once_for_every_pod_with_the_same_ones():
    tolerations = [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                    "effect": "NoExecute", "tolerationSeconds": 300}]
    first, second = (dict(rich_pod(name)) for name in ("a", "b"))
    for pod in (first, second):
        pod["spec"] = dict(pod["spec"], tolerations=[dict(t) for t in tolerations])
    a, b_ = make_pod_info(first), crossed(second)
    assert a.pod["spec"]["tolerations"] == tolerations == b_.pod["spec"]["tolerations"]
    assert a.tolerations is b_.tolerations          # one frozen copy, shared
    assert "tolerations" not in make_pod_info(rich_pod("c")).pod["spec"]


def test_only_kube_schedulers_refusal_is_kept_of_the_conditions():
    """A pending pod keeps its PodScheduled=False condition (the FailedScheduling message,
    for its page); a placed pod's conditions, all True, are not kept at all."""
    refused = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
               "message": "0/7 nodes are available: 4 Insufficient cpu.",
               "lastTransitionTime": "2026-11-26T05:05:14Z", "lastProbeTime": None}
    pending = make_pod("p", uid="uid-p")
    pending["status"]["conditions"] = [refused]
    kept = make_pod_info(pending).pod["status"]["conditions"]
    assert kept == [{k: v for k, v in refused.items() if k != "lastProbeTime"}]
    placed = make_pod("q", uid="uid-q", node_name="n1")
    placed["status"]["conditions"] = [{"type": "PodScheduled", "status": "True"},
                                      {"type": "Ready", "status": "True"}]
    assert "conditions" not in make_pod_info(placed).pod["status"]


def test_replicas_share_their_workload_and_keep_their_own_status():
    """The owner, spec and containers that replicas carry alike are kept once; timestamps
    and status stay each pod's, and `.pod` gives each back whole, in the order frozen."""
    owner = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d8f",
              "uid": "rs-uid", "controller": True}]
    replicas = []
    for i in range(2):
        pod = rich_pod(f"web-5d8f-{i}")
        pod["metadata"] = dict(pod["metadata"], generateName="web-5d8f-", ownerReferences=owner,
                               creationTimestamp=f"2026-11-29T05:0{i}:00Z")
        pod["status"] = {"phase": "Running", "podIP": f"10.0.0.{i}", "qosClass": "Burstable"}
        replicas.append(pod)
    a, b_ = make_pod_info(replicas[0]), crossed(replicas[1])
    assert a._workload is b_._workload              # one frozen copy, shared
    assert a._frozen != b_._frozen
    for info, pod in ((a, replicas[0]), (b_, replicas[1])):
        thawed = info.pod
        assert list(thawed["metadata"])[-3:] == ["generateName", "creationTimestamp",
                                                 "ownerReferences"]
        assert thawed["metadata"]["creationTimestamp"] == pod["metadata"]["creationTimestamp"]
        assert thawed["metadata"]["ownerReferences"] == owner
        assert thawed["status"] == pod["status"]
        assert thawed["spec"]["containers"][0]["resources"] == \
            pod["spec"]["containers"][0]["resources"]
    other = dict(replicas[0], spec=dict(replicas[0]["spec"], priority=9))
    assert make_pod_info(other)._workload is not a._workload


@pytest.mark.parametrize("affinity, kept", [
    (None, False), (b.pod_affinity_required(), True), (b.pod_anti_affinity_required(), True),
    (b.node_affinity_only(), False)])
def test_a_pod_info_made_without_its_mapping_keeps_it_only_for_inter_pod_affinity(affinity,
                                                                                  kept):
    """kube-scheduler's stand-in holds every placed pod and reads the Mapping of those with
    inter-pod affinity terms only (scheduling.podaffinity), their terms only: the rest
    keep their digest."""
    pod = b.pod("web", "node-1", cpu="250m", ports=[b.port(8080)], labels={"app": "web"},
                affinity=affinity, pvcs=["data"])
    whole, lean = make_pod_info(pod), make_pod_info(pod, mapping=False)
    assert [getattr(lean, slot) for slot in SLOTS] == [getattr(whole, slot) for slot in SLOTS]
    assert (lean.requested, lean.non_zero_requested) == (whole.requested,
                                                         whole.non_zero_requested)
    if kept:        # its workload's part: the spec and its terms; not its status
        assert lean.pod["spec"] == whole.pod["spec"]
        assert whole.pod["status"] == {"phase": "Pending"} and "status" not in lean.pod
        assert make_pod_info(dict(pod, status={"phase": "Running"}), mapping=False)._frozen \
            is lean._frozen
    else:
        assert lean._frozen is None and lean._workload is None
        assert lean.pod == {"metadata": {"name": "web", "namespace": "default",
                                         "uid": "uid-default-web", "resourceVersion": "1",
                                         "labels": {"app": "web"}},
                            "spec": {"nodeName": "node-1"}}
    cache = Cache(ttl=0)
    cache.add_pod_info(lean)
    assert cache.dump().nodes["node-1"].requested == whole.requested
