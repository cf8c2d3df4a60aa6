"""filter: placed -> Binding + assumed, wait reasons, preempt, repeated filters, platform errors."""
import pytest

from scheduling import ScheduleResult

from dashboard.owner.extender.core import NO_REASON
from tests.dashboard.owner.extender.extender_builders import filter_args, result_names

BOTH_FORMS = pytest.mark.parametrize("cache_capable", [True, False], ids=["NodeNames", "Nodes"])


@BOTH_FORMS
def test_placed_pod_becomes_binding_and_is_assumed_on_the_node(world, cache_capable):
    nodes = [world.node("n1"), world.node("n2"), world.node("n3")]
    pod = world.pod("web", requests={"cpu": "3"})
    result = world.extender.filter(filter_args(pod, nodes, cache_capable))

    assert result["Error"] == ""
    placed = result_names(result)
    assert len(placed) == 1
    node = placed[0]
    if cache_capable:
        assert result["Nodes"] is None and result["NodeNames"] == [node]
    else:
        assert result["NodeNames"] is None
        assert result["Nodes"]["items"] == [world.nodes[node]]   # the Node as sent
    # With a node listed kube-scheduler reads no refusals: none are sent.
    assert result["FailedAndUnresolvableNodes"] == {} and result["FailedNodes"] == {}

    status = world.statuses.get("uid-web")
    assert status.state == "Binding" and status.node == node and status.bind_attempts == 0
    assert world.cache.is_assumed_pod(pod)
    assert world.cache.get_pod(pod)["spec"]["nodeName"] == node
    assert "uid-web" in world.cache.node_info(node).pod_keys
    assert world.binds.calls == []          # kube-scheduler binds through `bind`


def test_a_second_pod_sees_the_first_one_assumed(world):
    nodes = [world.node("n1")]
    world.extender.filter(filter_args(world.pod("a", requests={"cpu": "3"}), nodes))
    result = world.extender.filter(filter_args(world.pod("b", requests={"cpu": "3"}), nodes))
    assert result_names(result) == []
    assert result["FailedNodes"] == {"n1": "Insufficient cpu"}
    assert world.statuses.state("uid-b") == "Waiting"


@BOTH_FORMS
def test_waiting_pod_reports_every_candidate_with_its_reason(world, cache_capable):
    full = world.node("full")
    tainted = world.node("tainted", taints=[{"key": "gpu", "value": "yes", "effect": "NoSchedule"}])
    cordoned = world.node("cordoned")
    world.cache.update_node(cordoned, dict(cordoned, spec=dict(cordoned["spec"],
                                                               unschedulable=True)))
    world.running("big", "full", requests={"cpu": "3500m"}, priority=1000)
    ghost = {"metadata": {"name": "ghost"}}    # a node kube-scheduler knows, the cache not
    pod = world.pod("waiter", requests={"cpu": "1"}, priority=10)
    result = world.extender.filter(filter_args(pod, [full, tainted, cordoned, ghost],
                                               cache_capable))

    assert result["Error"] == "" and result_names(result) == []
    assert result["FailedNodes"] == {
        "full": "Insufficient cpu",
        "tainted": "node(s) had untolerated taint {gpu: yes}",
        "cordoned": "node(s) were unschedulable",
        "ghost": "node(s) not found in the scheduler cache",
    }
    status = world.statuses.get("uid-waiter")
    assert status.state == "Waiting" and dict(status.wait_reasons) == result["FailedNodes"]
    assert world.cache.pod_state(pod) is None


def test_a_reasonless_wait_still_names_every_candidate(world):
    nodes = [world.node("n1"), world.node("n2")]

    class Silent:
        def schedule(self, pod, suggested):
            return ScheduleResult.wait({"n1": "busy"})

        def add_allocated_pod(self, pod):
            pass

    world.extender.algorithm = Silent()
    result = world.extender.filter(filter_args(world.pod("p"), nodes))
    assert result["FailedNodes"] == {"n1": "busy", "n2": NO_REASON}


def test_preemption_makes_the_pod_preempting_and_fails_every_node(world):
    nodes = [world.node("n1"), world.node("n2")]
    world.running("low1", "n1", requests={"cpu": "2"}, priority=1)
    world.running("low2", "n1", requests={"cpu": "1500m"}, priority=2)
    world.running("high", "n2", requests={"cpu": "3500m"}, priority=500)
    pod = world.pod("vip", requests={"cpu": "2"}, priority=100)
    result = world.extender.filter(filter_args(pod, nodes))

    # Listing n1 as feasible would make kube-scheduler bind there without preempting:
    # it fails resolvably, so kube-scheduler preempts and calls `preempt`.
    assert result_names(result) == []
    assert set(result["FailedNodes"]) == {"n1"}
    assert "preempting 1 lower-priority pod(s)" in result["FailedNodes"]["n1"]
    assert set(result["FailedAndUnresolvableNodes"]) == {"n2"}
    status = world.statuses.get("uid-vip")
    assert status.state == "Preempting" and status.node == "n1"
    assert {v.uid for v in status.victims["n1"]} == {"uid-low1"}
    assert all(v.priority < 100 for vs in status.victims.values() for v in vs)
    assert world.cache.pod_state(pod) is None        # nothing assumed while preempting


def test_preempting_pod_binds_once_its_victims_are_gone(world):
    nodes = [world.node("n1")]
    victim = world.running("low", "n1", requests={"cpu": "3"}, priority=1)
    pod = world.pod("vip", requests={"cpu": "2"}, priority=100)
    world.extender.filter(filter_args(pod, nodes))
    assert world.statuses.state("uid-vip") == "Preempting"

    world.cache.remove_pod(victim)                  # kube-scheduler evicted it
    result = world.extender.filter(filter_args(pod, nodes))
    assert result_names(result) == ["n1"]
    assert world.statuses.state("uid-vip") == "Binding"


@BOTH_FORMS
def test_repeated_filter_while_binding_counts_attempts_and_binds_itself(world, cache_capable):
    nodes = [world.node("n1"), world.node("n2")]
    pod = world.pod("slow", requests={"cpu": "1"})
    node = result_names(world.extender.filter(filter_args(pod, nodes, cache_capable)))[0]
    generation = world.cache.generation

    for attempt in (1, 2):
        result = world.extender.filter(filter_args(pod, nodes, cache_capable))
        assert result_names(result) == [node]               # the same placement, every time
        assert world.statuses.get("uid-slow").bind_attempts == attempt
        assert world.binds.calls == []
    world.extender.filter(filter_args(pod, nodes, cache_capable))   # the third attempt
    assert world.binds.calls == [("uid-slow", "default", "slow", node)]
    status = world.statuses.get("uid-slow")
    assert status.state == "Binding" and status.bind_attempts == 3 and status.bind_requested

    world.extender.filter(filter_args(pod, nodes, cache_capable))
    assert len(world.binds.calls) == 1                      # never twice
    assert world.cache.generation == generation             # assumed once, never again


def test_binding_pod_whose_node_is_no_longer_suggested_is_bound_at_once(world):
    nodes = [world.node("n1"), world.node("n2")]
    pod = world.pod("p", requests={"cpu": "1"})
    node = result_names(world.extender.filter(filter_args(pod, nodes)))[0]
    other = [n for n in nodes if n["metadata"]["name"] != node]

    result = world.extender.filter(filter_args(pod, other))
    assert result_names(result) == []
    assert node in next(iter(result["FailedAndUnresolvableNodes"].values()))
    assert world.binds.calls == [("uid-p", "default", "p", node)]
    assert world.statuses.get("uid-p").bind_attempts == 1


def test_binding_pod_whose_node_left_the_cache_is_scheduled_again(world):
    nodes = [world.node("n1"), world.node("n2")]
    pod = world.pod("p", requests={"cpu": "1"})
    first = result_names(world.extender.filter(filter_args(pod, nodes)))[0]
    world.cache.remove_node(world.nodes[first])

    result = world.extender.filter(filter_args(pod, nodes))
    second = result_names(result)
    assert second and second[0] != first
    status = world.statuses.get("uid-p")
    assert status.state == "Binding" and status.node == second[0]
    assert world.cache.get_pod(pod)["spec"]["nodeName"] == second[0]
    assert world.binds.calls == []


def test_forgotten_pod_is_scheduled_afresh(world):
    nodes = [world.node("n1")]
    pod = world.pod("p", requests={"cpu": "1"})
    world.extender.filter(filter_args(pod, nodes))
    world.cache.forget_pod(world.cache.get_pod(pod))       # the bind failed for good
    assert world.statuses.state("uid-p") == "Unknown"

    result = world.extender.filter(filter_args(pod, nodes))
    assert result_names(result) == ["n1"]
    assert world.statuses.get("uid-p").bind_attempts == 0


def test_platform_failure_is_reported_in_error_and_changes_nothing(world):
    nodes = [world.node("n1")]
    pod = world.pod("p", requests={"cpu": "1"})

    class Broken:
        def schedule(self, pod, suggested):
            raise RuntimeError("snapshot exploded")

    world.extender.algorithm = Broken()
    before = world.state()
    result = world.extender.filter(filter_args(pod, nodes))
    assert "snapshot exploded" in result["Error"] and "default/p" in result["Error"]
    assert result["Nodes"] is None and result["NodeNames"] is None
    assert world.state() == before


def test_pod_already_bound_in_the_cache_is_listed_where_it_is(world):
    """kube-scheduler's informer lags the owner's watch: the pod it filters is bound."""
    nodes = [world.node("n1"), world.node("n2")]
    pod = world.pod("p", requests={"cpu": "1"}, node_name="n2")
    world.cache.add_pod(pod)
    before = world.state()
    assert result_names(world.extender.filter(filter_args(pod, nodes))) == ["n2"]
    assert world.state() == before


def test_each_call_is_decided_over_its_own_node_names(world):
    """The extender remembers the last NodeNames (kube-scheduler repeats them): a call with
    other names must still be decided over those."""
    nodes = [world.node("n1"), world.node("n2"), world.node("n3")]
    for names in (["n1", "n2", "n3"], ["n3"], ["n2", "n2"], ["n1", "n2", "n3"], ["n1"]):
        pod = world.pod(requests={"cpu": "1"})
        suggested = [world.nodes[n] for n in names]
        result = world.extender.filter(filter_args(pod, suggested))
        assert result_names(result)[0] in names, names
    assert [n["metadata"]["name"] for n in nodes] == ["n1", "n2", "n3"]
