"""DefaultAlgorithm end to end over a schedcache Cache: bind, spread, preempt, wait."""
import threading

import pytest

from schedcache.nodetree import zone_key
from scheduling import DefaultAlgorithm, SchedulerAlgorithm, ScheduleResult, predicates as pr

from tests.scheduling.sched_builders import pod

SMALL = {"cpu": "4", "memory": "8Gi", "pods": "110", "ephemeral-storage": "10Gi"}


def bind(cache, result, pending):
    """What the cache owner does after a bind decision: assume the pod on the node."""
    placed = dict(pending, spec=dict(pending["spec"], nodeName=result.bind_info.node))
    cache.assume_pod(placed)
    return placed


def test_default_algorithm_is_a_scheduler_algorithm(cluster):
    _, algorithm, _ = cluster
    assert isinstance(algorithm, SchedulerAlgorithm)


def test_binds_on_a_suggested_node_with_room(cluster):
    _, algorithm, add = cluster
    add("n1", allocatable=SMALL)
    add("n2", allocatable=SMALL)
    result = algorithm.schedule(pod(requests={"cpu": "3"}), ["n2"])
    assert result.kind == "bind" and result.bind_info.node == "n2"
    assert result.preempt_info is None and result.wait_info is None


def test_waits_with_a_reason_per_node(cluster):
    _, algorithm, add = cluster
    add("n1", allocatable=SMALL)
    add("n2", allocatable=SMALL, taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}])
    result = algorithm.schedule(pod(requests={"cpu": "5"}), ["n1", "n2", "ghost"])
    assert result.kind == "wait"
    assert dict(result.wait_info.failed_node_reasons) == {
        "n1": "Insufficient cpu",
        "n2": "node(s) had untolerated taint {k: v}",
        "ghost": pr.NODE_NOT_FOUND,
    }


def test_consecutive_pods_spread_across_zones_in_node_tree_order(cluster):
    cache, algorithm, add = cluster
    for i in range(3):
        for zone in ("zone-a", "zone-b", "zone-c"):
            add(f"{zone}-{i}", zone=zone)
    names = [info.name for info in (cache.node_info(n) for n in cache.node_tree.list())]
    chosen = []
    for _ in range(6):
        pending = pod(requests={"cpu": "1"})
        result = algorithm.schedule(pending, names)
        chosen.append(result.bind_info.node)
        bind(cache, result, pending)
    assert chosen == cache.node_tree.list()[:6]
    zones = [zone_key(cache.node_info(n).node) for n in chosen]
    assert all(a != b for a, b in zip(zones, zones[1:]))
    assert len(set(zones[:3])) == 3


def test_spreading_skips_full_zone(cluster):
    cache, algorithm, add = cluster
    add("a1", zone="zone-a", allocatable=SMALL)
    add("b1", zone="zone-b", allocatable={**SMALL, "cpu": "1"})
    add("c1", zone="zone-c", allocatable=SMALL)
    chosen = []
    for _ in range(3):
        pending = pod(requests={"cpu": "2"})
        result = algorithm.schedule(pending, ["a1", "b1", "c1"])
        chosen.append(result.bind_info.node)
        bind(cache, result, pending)
    assert chosen == ["a1", "c1", "a1"]


def test_fed_from_the_cache_snapshot(cluster):
    cache, algorithm, add = cluster
    add("n1", allocatable=SMALL)
    first = pod(requests={"cpu": "3"})
    bind(cache, algorithm.schedule(first, ["n1"]), first)
    result = algorithm.schedule(pod(requests={"cpu": "3"}), ["n1"])
    assert result.wait_info.failed_node_reasons == {"n1": "Insufficient cpu"}
    cache.forget_pod(dict(first, spec=dict(first["spec"], nodeName="n1")))
    assert algorithm.schedule(pod(requests={"cpu": "3"}), ["n1"]).kind == "bind"


def test_node_changes_reach_the_algorithm(cluster):
    cache, algorithm, add = cluster
    node = add("n1", allocatable=SMALL)
    assert algorithm.schedule(pod(), ["n1"]).kind == "bind"
    tainted = dict(node, spec=dict(node["spec"], taints=[{"key": "k", "value": "v",
                                                          "effect": "NoExecute"}]))
    cache.update_node(node, tainted)
    algorithm.update_node(node, tainted)
    assert algorithm.schedule(pod(), ["n1"]).wait_info.failed_node_reasons == {
        "n1": "node(s) had untolerated taint {k: v}"}
    cache.remove_node(tainted)
    algorithm.delete_node(tainted)
    assert algorithm.schedule(pod(), ["n1"]).wait_info.failed_node_reasons == {
        "n1": pr.NODE_NOT_FOUND}


def test_preempts_the_fewest_lower_priority_victims(cluster):
    cache, algorithm, add = cluster
    add("many", allocatable=SMALL)
    add("few", allocatable=SMALL)
    for i in range(4):
        cache.add_pod(pod(f"m{i}", node_name="many", requests={"cpu": "1"}, priority=10))
    cache.add_pod(pod("f0", node_name="few", requests={"cpu": "2"}, priority=10))
    cache.add_pod(pod("f1", node_name="few", requests={"cpu": "2"}, priority=10))
    result = algorithm.schedule(pod(requests={"cpu": "2"}, priority=100), ["many", "few"])
    assert result.kind == "preempt"
    assert result.preempt_info.node == "few"
    victims = result.preempt_info.victims["few"]
    assert len(victims) == 1 and victims[0].name in ("f0", "f1")


def test_reprieve_keeps_the_higher_priority_pods(cluster):
    cache, algorithm, add = cluster
    add("n1", allocatable=SMALL)
    cache.add_pod(pod("low", node_name="n1", requests={"cpu": "1"}, priority=1))
    cache.add_pod(pod("mid", node_name="n1", requests={"cpu": "1"}, priority=5))
    cache.add_pod(pod("big", node_name="n1", requests={"cpu": "2"}, priority=3))
    result = algorithm.schedule(pod(requests={"cpu": "2"}, priority=10), ["n1"])
    # removing lowest first: low (1 free), big (3 free: fits); reprieve big first: no; low: yes
    assert [v.name for v in result.preempt_info.victims["n1"]] == ["big"]


def test_never_preempts_equal_or_higher_priority(cluster):
    cache, algorithm, add = cluster
    add("n1", allocatable=SMALL)
    cache.add_pod(pod("same", node_name="n1", requests={"cpu": "2"}, priority=100))
    cache.add_pod(pod("higher", node_name="n1", requests={"cpu": "2"}, priority=200))
    result = algorithm.schedule(pod(requests={"cpu": "2"}, priority=100), ["n1"])
    assert result.kind == "wait"
    assert result.wait_info.failed_node_reasons == {"n1": "Insufficient cpu"}


def test_tie_breaks_on_lowest_victim_priority_then_node_tree_order(cluster):
    cache, algorithm, add = cluster
    add("a", zone="zone-a", allocatable=SMALL)
    add("b", zone="zone-b", allocatable=SMALL)
    add("c", zone="zone-c", allocatable=SMALL)
    cache.add_pod(pod("a0", node_name="a", requests={"cpu": "4"}, priority=50))
    cache.add_pod(pod("b0", node_name="b", requests={"cpu": "4"}, priority=20))
    cache.add_pod(pod("c0", node_name="c", requests={"cpu": "4"}, priority=20))
    result = algorithm.schedule(pod(requests={"cpu": "1"}, priority=100), ["c", "b", "a"])
    assert result.preempt_info.node == "b"


def test_preemption_policy_never(cluster):
    cache, algorithm, add = cluster
    add("n1", allocatable=SMALL)
    cache.add_pod(pod("low", node_name="n1", requests={"cpu": "4"}, priority=1))
    pending = pod(requests={"cpu": "1"}, priority=100)
    pending["spec"]["preemptionPolicy"] = "Never"
    result = algorithm.schedule(pending, ["n1"])
    assert result.kind == "wait"
    assert result.wait_info.failed_node_reasons == {"n1": "Insufficient cpu"}


def test_preemption_frees_host_ports(cluster):
    cache, algorithm, add = cluster
    add("n1", allocatable=SMALL)
    cache.add_pod(pod("web", node_name="n1", host_ports=[80], priority=1))
    cache.add_pod(pod("other", node_name="n1", host_ports=[81], priority=1))
    result = algorithm.schedule(pod(host_ports=[80], priority=10), ["n1"])
    assert [v.name for v in result.preempt_info.victims["n1"]] == ["web"]


def test_no_preemption_on_nodes_refused_for_unresolvable_reasons(cluster):
    cache, algorithm, add = cluster
    add("n1", allocatable=SMALL, labels={"disk": "hdd"})
    cache.add_pod(pod("low", node_name="n1", requests={"cpu": "4"}, priority=1))
    result = algorithm.schedule(pod(requests={"cpu": "1"}, priority=100,
                                    node_selector={"disk": "ssd"}), ["n1"])
    assert result.wait_info.failed_node_reasons == {"n1": pr.NODE_AFFINITY}


def test_wait_when_even_all_victims_are_not_enough(cluster):
    cache, algorithm, add = cluster
    add("n1", allocatable=SMALL)
    cache.add_pod(pod("low", node_name="n1", requests={"cpu": "1"}, priority=1))
    result = algorithm.schedule(pod(requests={"cpu": "5"}, priority=100), ["n1"])
    assert result.wait_info.failed_node_reasons == {"n1": "Insufficient cpu"}


def test_inputs_are_not_changed(cluster):
    _, algorithm, add = cluster
    add("n1")
    pending = pod(requests={"cpu": "1"})
    before = repr(pending)
    names = ["n1"]
    algorithm.schedule(pending, names)
    assert repr(pending) == before and names == ["n1"]


def test_schedule_holds_the_lock(cluster):
    cache, algorithm, add = cluster
    add("n1")
    entered = threading.Event()
    release = threading.Event()
    original = algorithm.filter

    def slow_filter(*args):
        entered.set()
        release.wait(5)
        return original(*args)
    algorithm.filter = slow_filter
    worker = threading.Thread(target=algorithm.schedule, args=(pod(), ["n1"]))
    worker.start()
    entered.wait(5)
    done = threading.Event()
    other = threading.Thread(target=lambda: (algorithm.add_allocated_pod(pod()), done.set()))
    other.start()
    assert not done.wait(0.1)     # add_allocated_pod waits for schedule to finish
    release.set()
    worker.join(5)
    other.join(5)
    assert done.is_set()


def test_result_sets_only_one_decision():
    with pytest.raises(ValueError):
        ScheduleResult(bind_info=ScheduleResult.bind("n").bind_info,
                       wait_info=ScheduleResult.wait({}).wait_info)
    assert ScheduleResult().kind == "wait"


def test_unknown_option_is_refused(cluster):
    cache, _, _ = cluster
    with pytest.raises(TypeError):
        DefaultAlgorithm(cache, colour="blue")


def test_reprieve_runs_highest_priority_first(cluster):
    cache, algorithm, add = cluster
    add("n1", allocatable={**SMALL, "cpu": "8"})
    cache.add_pod(pod("a", node_name="n1", requests={"cpu": "1"}, priority=1))
    cache.add_pod(pod("b", node_name="n1", requests={"cpu": "1"}, priority=2))
    cache.add_pod(pod("c", node_name="n1", requests={"cpu": "2"}, priority=3))
    cache.add_pod(pod("d", node_name="n1", requests={"cpu": "4"}, priority=9))
    result = algorithm.schedule(pod(requests={"cpu": "3"}, priority=5), ["n1"])
    # a, b, c come off (4 free); c cannot come back, b can, then a cannot
    assert sorted(v.name for v in result.preempt_info.victims["n1"]) == ["a", "c"]


def test_preempts_for_extended_resources(cluster):
    cache, algorithm, add = cluster
    gpu = "nvidia.com/gpu"
    add("n1", allocatable={**SMALL, gpu: "2"})
    cache.add_pod(pod("g1", node_name="n1", requests={gpu: "1"}, priority=1))
    cache.add_pod(pod("g2", node_name="n1", requests={gpu: "1"}, priority=2))
    cache.add_pod(pod("cpu", node_name="n1", requests={"cpu": "1"}, priority=0))
    result = algorithm.schedule(pod(requests={gpu: "1"}, priority=10), ["n1"])
    # the cpu-only pod is the lowest but frees no GPU: it is reprieved
    assert [v.name for v in result.preempt_info.victims["n1"]] == ["g1"]


def test_preempts_when_the_node_has_too_many_pods(cluster):
    cache, algorithm, add = cluster
    add("n1", allocatable={**SMALL, "pods": "2"})
    cache.add_pod(pod("x", node_name="n1", priority=3))
    cache.add_pod(pod("y", node_name="n1", priority=1))
    result = algorithm.schedule(pod(priority=10), ["n1"])
    assert [v.name for v in result.preempt_info.victims["n1"]] == ["y"]


def test_node_labels_and_taints_are_parsed_again_only_when_the_node_changes(cluster):
    """Pods coming and going keep a record's parsed Node; a Node update, interleaved with
    them, is seen at the next schedule call."""
    cache, algorithm, add = cluster
    node = add("n1", allocatable=SMALL, labels={"disk": "ssd"})
    ssd = pod(requests={"cpu": "1"}, node_selector={"disk": "ssd"})
    bind(cache, algorithm.schedule(ssd, ["n1"]), ssd)
    kept = algorithm.records.by_name["n1"]
    other = pod(requests={"cpu": "1"})
    bind(cache, algorithm.schedule(other, ["n1"]), other)
    algorithm.refresh()
    renewed = algorithm.records.by_name["n1"]
    assert renewed is not kept and renewed.labels is kept.labels     # only pods changed
    assert renewed.free_cpu == kept.free_cpu - 2000                  # both pods counted

    relabelled = dict(node, metadata=dict(node["metadata"], labels={"disk": "hdd"}))
    cache.update_node(node, relabelled)
    third = pod(requests={"cpu": "1"})
    bind(cache, algorithm.schedule(third, ["n1"]), third)   # a pod change after the node's
    result = algorithm.schedule(pod(requests={"cpu": "1"}, node_selector={"disk": "ssd"}),
                                ["n1"])
    assert result.wait_info.failed_node_reasons == {"n1": pr.NODE_AFFINITY}
