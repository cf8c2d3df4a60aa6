"""How the stand-in's view keeps pods (issue 26), fed by hand as its reflectors feed it: a
pod with a node as the cache's digest, one without frozen, thawed as it came; how often it
relists."""
import logging
from types import SimpleNamespace

import orjson
import pytest

from schedcache import Cache

from simcluster.generate import make_node, make_pod

from scheduling.noderecords import NodeRecord

from dashboard.kube.reflector import CLAIMS, Relisted, Watched
from dashboard.standin.standin_view import (
    PAGE_SIZE,
    RELIST_PERIOD,
    SCHEDULER_NAME,
    BoundPod,
    ClusterView,
    PendingPod,
    VictimFacts,
    kept,
    node_filtered,
)

NOW = "2026-11-29T06:00:00Z"
PREEMPTED = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}


def pod(name, **kwargs):
    return make_pod(name, namespace="ns", uid=f"uid-{name}", requests={"cpu": "1"},
                    **kwargs)


def with_(base, *, spec=None, meta=None, status=None):
    return {**base, "spec": {**base["spec"], **(spec or {})},
            "metadata": {**base["metadata"], **(meta or {})},
            "status": {**base.get("status", {}), **(status or {})}}


def nameless():
    whole = pod("nameless")
    del whole["metadata"]["name"]
    return whole


WAITING = pod("waiting", priority=7, resource_version="42")
# pod -> (scheduler, facts, finished) of its PendingPod
PENDING = {
    "plain": (WAITING, (SCHEDULER_NAME, VictimFacts("", False, False), False)),
    "another scheduler": (with_(WAITING, spec={"schedulerName": "other"}),
                          ("other", VictimFacts("", False, False), False)),
    "named none": (with_(WAITING, spec={"schedulerName": None}),
                   (None, VictimFacts("", False, False), False)),
    "preempted, deleting": (with_(WAITING, meta={"deletionTimestamp": NOW},
                                  status={"startTime": NOW, "conditions": [PREEMPTED]}),
                            (SCHEDULER_NAME, VictimFacts(NOW, True, True), False)),
    "failed": (with_(WAITING, status={"phase": "Failed"}),
               (SCHEDULER_NAME, VictimFacts("", False, False), True)),
}


@pytest.mark.parametrize("whole, expected", PENDING.values(), ids=PENDING)
def test_a_pod_without_a_node_is_kept_as_what_a_period_picks_by_and_frozen(whole, expected):
    frozen = kept(whole)
    assert isinstance(frozen, PendingPod)
    assert (frozen.scheduler, frozen.facts, frozen.finished) == expected
    assert (frozen.uid, frozen.version, frozen.order) == (
        "uid-waiting", "42", (-7, whole["metadata"]["creationTimestamp"], "ns", "waiting"))
    assert frozen.thaw() == whole
    # No part of the pod is kept as parsed JSON: only its compressed bytes.
    assert not any(isinstance(part, (dict, list)) for part in frozen)
    assert len(frozen.frozen) < len(orjson.dumps(whole))


KEPT = {
    "bound": (pod("bound", node_name="n1"), BoundPod),
    "bound, undigestible": (with_(pod("odd", node_name="n1"), spec={"containers": 3}), dict),
    "pending, nameless": (nameless(), dict),
}


@pytest.mark.parametrize("whole, form", KEPT.values(), ids=KEPT)
def test_the_pods_reflector_s_digest_keeps_other_pods_as_before(whole, form):
    assert type(kept(whole)) is form


def api():
    """Enough of a CoreV1Api for reflectors that are never started."""
    return SimpleNamespace(list_node=None, list_pod_for_all_namespaces=None,
                           list_persistent_volume_claim_for_all_namespaces=None)


def synced(*pods):
    view = ClusterView(api())
    for kind, items in (("nodes", [make_node("n1")]), ("pods", [kept(p) for p in pods]),
                        (CLAIMS, [])):
        view._receive(Relisted(kind, items, "1"))
    assert view.sync()
    return view


def test_the_view_queues_pending_pods_frozen_and_never_a_pod_it_cannot_order():
    bound = pod("bound", node_name="n1")
    view = synced(WAITING, nameless(), bound)
    assert list(view.pending) == ["uid-waiting"]
    assert view.pending["uid-waiting"] is view.held["uid-waiting"]
    assert view.held["uid-nameless"] == nameless()
    assert view.victim_facts("uid-nameless") == VictimFacts("", False, False)
    # a placed pod is the cache's digest alone
    assert "uid-bound" not in view.held and view.holds("uid-bound")
    assert view.cache.pod_info("uid-bound").node_name == "n1"
    view._receive(Watched("pods", "MODIFIED", kept(with_(WAITING, status={"phase": "Failed"})),
                          "43"))
    view._receive(Watched("pods", "DELETED", kept(nameless()), "44"))
    view.sync()
    assert view.pending == {}
    assert set(view.held) == {"uid-waiting"}
    assert not view.holds("uid-nameless") and view.holds("uid-bound")


def test_the_view_lists_in_client_go_s_pages_unless_told_otherwise():
    assert {r.page_size for r in ClusterView(api())._reflectors.values()} == {PAGE_SIZE}
    assert {r.page_size for r in ClusterView(api(), page_size=7)._reflectors.values()} == {7}


BOUND = pod("bound", node_name="n1", resource_version="5")
# pod listed again -> whether the view's digest is what it already holds of it
RELISTED = {
    "bound, unchanged": (BOUND, True),
    "bound, a new version": (with_(BOUND, meta={"resourceVersion": "6"}), False),
    "pending, unchanged": (WAITING, True),
    "pending, a new version": (with_(WAITING, meta={"resourceVersion": "43"}), False),
    "not held": (pod("new"), False),
}


def held(view, uid):
    """What the view holds of a pod: the cache's digest of a placed pod, else held."""
    return view.held.get(uid) or view.cache.pod_info(uid)


@pytest.mark.parametrize("listed, same", RELISTED.values(), ids=RELISTED)
def test_a_relist_digests_only_the_pods_that_changed(listed, same):
    view = synced(WAITING, BOUND)
    uid = listed["metadata"]["uid"]
    free = view.algorithm.records.by_name["n1"].free_cpu
    generation = view.cache.dump().nodes["n1"].generation
    before = held(view, uid)
    digest = view._kept(listed)
    assert (digest is before) == same
    if not same:
        assert type(digest) is type(kept(listed))
    view._receive(Relisted("pods", [view._kept(p) for p in (WAITING, BOUND)
                                    if p["metadata"]["uid"] != uid] + [digest], "2"))
    assert view.sync()
    assert view.algorithm.records.by_name["n1"].free_cpu == free     # the bound pod, once
    assert held(view, uid) is (digest.info if isinstance(digest, BoundPod) else digest)
    # a relist that changed nothing on the node leaves its generation alone
    unchanged = same or listed["spec"].get("nodeName") != "n1"
    assert (view.cache.dump().nodes["n1"].generation == generation) == unchanged


# a placed pod's status and metadata -> what preemption reads of it
FACTS = {
    "running": ({"phase": "Running", "startTime": NOW}, {}, VictimFacts(NOW, False, False)),
    "not started": ({"phase": "Pending"}, {}, VictimFacts("", False, False)),
    "odd start": ({"phase": "Running", "startTime": "yesterday"}, {},
                  VictimFacts("yesterday", False, False)),
    "preempted, deleting": ({"phase": "Running", "startTime": NOW, "conditions": [PREEMPTED]},
                            {"deletionTimestamp": NOW}, VictimFacts(NOW, True, True)),
}


@pytest.mark.parametrize("status, meta, facts", FACTS.values(), ids=FACTS)
def test_a_placed_pod_s_facts_are_kept_beside_the_cache_and_forgotten_with_it(status, meta,
                                                                             facts):
    placed = {**with_(pod("placed", node_name="n1", resource_version="5"), meta=meta),
              "status": status}
    view = synced(placed)
    assert view.victim_facts("uid-placed") == facts
    assert ("uid-placed" in view.started) == bool(facts.start_time)
    assert ("uid-placed" in view.condemned) == facts.deleting
    # a later version without them forgets them
    view._receive(Watched("pods", "MODIFIED",
                          kept({**pod("placed", node_name="n1", resource_version="6"),
                                "status": {"phase": "Running"}}), "6"))
    view.sync()
    assert view.victim_facts("uid-placed") == VictimFacts("", False, False)
    view._receive(Watched("pods", "DELETED", kept(placed), "7"))
    view.sync()
    assert view.victim_facts("uid-placed") is None
    assert (view.started, view.condemned, view.held) == ({}, {}, {})


def test_the_view_keeps_its_nodes_as_names_and_the_cache_the_nodes():
    view = synced()
    bigger = make_node("n1", allocatable={"cpu": "64", "memory": "128Gi", "pods": "110"})
    view._receive(Watched("nodes", "MODIFIED", bigger, "2"))
    view._receive(Watched("nodes", "ADDED", make_node("n2"), "3"))
    view.sync()
    assert view.nodes == {"n1", "n2"}
    assert view.cache.node_info("n1").allocatable.milli_cpu == 64_000
    view._receive(Watched("nodes", "DELETED", make_node("n2"), "4"))
    view._receive(Watched("nodes", "DELETED", make_node("gone"), "5"))   # never seen
    view._receive(Relisted("nodes", [make_node("n3")], "6"))    # n1 went while unwatched
    view.sync()
    assert view.nodes == {"n3"} and view.cache.node_names() == ["n3"]


FILTERED = {
    "plain": make_node("n1", images=[{"names": ["registry/app:v1"], "sizeBytes": 10}]),
    "tainted, labelled, GPUs": make_node(
        "n2", gpus=8, labels={"team": "ml"},
        taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}]),
    "cordoned": with_(make_node("n3"), spec={"unschedulable": True}),
    "bare": {"metadata": {"name": "n4"}},
}


def _filters_read(record):
    return (record.labels, record.taints, record.unschedulable, record.zone, record.free_cpu,
            record.free_memory, record.free_pods, record.free_scalars)


@pytest.mark.parametrize("node", FILTERED.values(), ids=FILTERED)
def test_a_node_is_kept_as_the_filter_plugins_read_it(node):
    """What kube-scheduler's filters read of the filtered node is what they read of the whole
    one; what they never read (images, conditions, annotations) is not kept."""
    view = ClusterView(api())
    assert view._reflectors["nodes"].digest is node_filtered
    whole, filtered = Cache(ttl=0), Cache(ttl=0)
    whole.add_node(node)
    filtered.add_node(node_filtered(node))
    name = node["metadata"]["name"]
    read = [_filters_read(NodeRecord(cache.node_info(name), 0)) for cache in (whole, filtered)]
    assert read[0] == read[1]
    kept_node = filtered.node_info(name).node
    assert set(kept_node["status"]) == {"allocatable"}
    assert "annotations" not in kept_node["metadata"]
    assert filtered.node_info(name).image_states == {}


def relists_asked(view) -> bool:
    """Whether sync() asked every reflector to relist (and forget the asking, for the next)."""
    asked = [r._relist_requested for r in view._reflectors.values()]
    for reflector in view._reflectors.values():
        reflector._relist_requested = False
    assert len(set(asked)) == 1
    return asked[0]


# (the first list's duration, a relist's) -> seconds from the relist's end to the next relist
RELIST_WAITS = {
    "cheap": ((0.0, 0.7), RELIST_PERIOD),
    "20 x its duration is the floor": ((0.0, 6.0), RELIST_PERIOD),
    "10 s": ((0.0, 10.0), 200.0),
    "30 s": ((0.0, 30.0), 600.0),
    "after a cheap one, a dear one": ((30.0, 0.7), RELIST_PERIOD),
}


@pytest.mark.parametrize("durations, wait", RELIST_WAITS.values(), ids=RELIST_WAITS)
def test_the_next_relist_waits_at_least_20_times_what_the_last_one_took(durations, wait,
                                                                        caplog):
    """At 600,000 pods a relist costs about a minute of CPU: at a fixed period that would be
    most of a core. Durations on the view's clock, from asking to the pods' list applied."""
    first, took = durations
    clock = [0.0]
    view = ClusterView(api(), clock=lambda: clock[0])
    clock[0] = first
    for kind in ("nodes", "pods", CLAIMS):
        view._receive(Relisted(kind, [], "1"))
    with caplog.at_level(logging.INFO, logger="dashboard.standin.standin_view"):
        assert view.sync()
        due = first + max(RELIST_PERIOD, 20 * first)     # the first list's cost counts too
        clock[0] = due - 1
        assert view.sync() and not relists_asked(view)
        clock[0] = due
        assert view.sync() and relists_asked(view)
        clock[0] = due + took
        assert view.sync() and not relists_asked(view)   # one relist in flight at a time
        view._receive(Relisted("pods", [], "2"))
        assert view.sync() and not relists_asked(view)
        clock[0] = due + took + wait - 1
        assert view.sync() and not relists_asked(view)
        clock[0] = due + took + wait
        assert view.sync() and relists_asked(view)
    assert [r.getMessage() for r in caplog.records] == [
        f"the stand-in's view relisted in {first:.1f} s; the next relist in "
        f"{max(RELIST_PERIOD, 20 * first):.0f} s",
        f"the stand-in's view relisted in {took:.1f} s; the next relist in {wait:.0f} s"]


def test_an_assumed_pod_is_no_period_s_candidate_until_its_bind_is_forgotten():
    """`pending` is what a period picks from: the stand-in's own assumed pod leaves it at
    once, stays out through its own events, and comes back if its bind fails."""
    view = synced(WAITING)
    assumed = view.assume(view.pending["uid-waiting"].thaw(), "n1")
    assert view.pending == {} and view.is_assumed("uid-waiting")
    newer = kept(with_(WAITING, meta={"resourceVersion": "43"}))
    view._receive(Watched("pods", "MODIFIED", newer, "43"))
    view.sync()
    assert view.pending == {} and view.held["uid-waiting"] is newer
    view.forget(assumed)
    assert view.pending == {"uid-waiting": newer}
    # confirmed by the watch instead: placed, and pending no more
    view.assume(newer.thaw(), "n1")
    view._receive(Watched("pods", "MODIFIED", kept(with_(WAITING, spec={"nodeName": "n1"},
                                                         meta={"resourceVersion": "44"})),
                          "44"))
    view.sync()
    assert (view.pending, view.held) == ({}, {})
    assert view.cache.pod_info("uid-waiting").node_name == "n1"


def test_a_deletion_at_the_version_the_view_holds_removes_the_placed_pod():
    """The pods reflector's digest of an unchanged pod is the cache's own PodInfo, whatever
    the event: a DELETED carrying the version held removes the pod like any other."""
    view = synced(BOUND)
    digest = view._kept(BOUND)
    assert digest is view.cache.pod_info("uid-bound")
    view._receive(Watched("pods", "DELETED", digest, "6"))
    view.sync()
    assert not view.holds("uid-bound")
    empty = synced().algorithm.records.by_name["n1"].free_cpu
    assert view.algorithm.records.by_name["n1"].free_cpu == empty
