"""bind is real before it is answered, and preempt works for any pod of the cluster, as
kube-scheduler v1.36 drives them (shared k8s-wire/extender: 01, 03a-03g, 05a, 05b, 07)."""
from dashboard.kube.binding import FORGET, RETRY
from tests.dashboard.owner.extender.extender_builders import (
    Bindings,
    bind_args,
    call,
    filter_args,
    preempt_args,
    result_names,
    wire,
)


def placed(world, name="p", cpu="1", nodes=None):
    nodes = nodes or [world.node("n1"), world.node("n2")]
    pod = world.pod(name, requests={"cpu": cpu})
    node = result_names(world.extender.filter(filter_args(pod, nodes)))[0]
    return pod, node


def binding_finished(world, uid):
    status = world.cache.assumed_pod_status({"metadata": {"uid": uid}})
    return status is not None and status[0]


# --- bind -------------------------------------------------------------------------------------

def test_bind_answers_success_only_after_the_binding_was_made(world):
    pod, node = placed(world)
    bindings = Bindings()
    assert call(world, "bind", bind_args(pod, node), bindings) == (200, {"Error": ""})
    assert bindings.posted == [("uid-p", "default", "p", node)]
    assert binding_finished(world, "uid-p")                   # its expiry clock runs
    assert world.statuses.state("uid-p") == "Binding"         # Bound once the watch says so
    assert world.binds.calls == []                            # nothing left for Celery


def test_a_refused_binding_is_an_error_and_the_pod_is_bound_once_the_refusal_lifts(world):
    # 05a/05b: an Error makes kube-scheduler forget its assumption and retry from filter.
    nodes = [world.node("n1"), world.node("n2")]
    pod, node = placed(world, nodes=nodes)
    bindings = Bindings()
    bindings.outcomes.append((FORGET, "binding refused: 403 pods \"p\" is forbidden: "
                                      "admission webhook denied the request"))
    status, result = call(world, "bind", bind_args(pod, node), bindings)
    assert status == 200 and "admission webhook denied" in result["Error"]
    assert world.cache.pod_state({"metadata": {"uid": "uid-p"}}) is None   # forgotten
    assert "uid-p" not in world.statuses
    # kube-scheduler's next attempt: filter, then bind, which the API server now accepts
    again = result_names(world.extender.filter(filter_args(pod, nodes)))[0]
    assert call(world, "bind", bind_args(pod, again), bindings) == (200, {"Error": ""})
    assert len(bindings.posted) == 2 and binding_finished(world, "uid-p")


def test_a_binding_the_api_server_could_not_answer_is_an_error_too(world):
    pod, node = placed(world)
    bindings = Bindings()
    bindings.outcomes.append((RETRY, "binding answered 500 Internal Server Error"))
    status, result = call(world, "bind", bind_args(pod, node), bindings)
    assert status == 200 and "500 Internal Server Error" in result["Error"]
    assert world.cache.pod_state({"metadata": {"uid": "uid-p"}}) is None


def test_a_repeated_bind_makes_no_second_binding(world):
    pod, node = placed(world)
    bindings = Bindings()
    call(world, "bind", bind_args(pod, node), bindings)
    assert call(world, "bind", bind_args(pod, node), bindings) == (200, {"Error": ""})
    assert len(bindings.posted) == 1


def test_the_watch_confirms_and_bound_keeps_its_bind_attempts(world):
    pod, node = placed(world)
    call(world, "bind", bind_args(pod, node))
    world.cache.add_pod(dict(pod, spec=dict(pod["spec"], nodeName=node)))  # the watch
    status = world.statuses.get("uid-p")
    assert status.state == "Bound" and status.node == node and status.bind_attempts == 1
    assert call(world, "bind", bind_args(pod, node)) == (200, {"Error": ""})
    assert world.extender.confirmed("uid-p", node) is False          # already Bound


def test_confirmed_can_be_called_directly(world):
    placed(world)
    assert world.extender.confirmed("uid-p") is True
    assert world.statuses.state("uid-p") == "Bound"
    assert world.extender.confirmed("uid-unknown") is False
    assert "uid-unknown" not in world.statuses


def test_a_pod_the_extender_binds_itself_is_bound_once(world):
    nodes = [world.node("n1")]
    pod, node = placed(world, nodes=nodes)
    for _ in range(3):
        world.extender.filter(filter_args(pod, nodes))
    assert len(world.binds.calls) == 1                    # forced, through Celery
    world.cache.finish_binding(pod)                       # ... which bound it
    bindings = Bindings()
    assert call(world, "bind", bind_args(pod, node), bindings) == (200, {"Error": ""})
    assert bindings.posted == []


def test_bind_on_another_node_is_an_error_and_changes_nothing(world):
    pod, node = placed(world)
    other = "n2" if node == "n1" else "n1"
    before = world.state()
    status, result = call(world, "bind", bind_args(pod, other))
    assert status == 200 and f"placed on node {node}, not {other}" in result["Error"]
    assert world.state() == before


def test_bind_of_a_waiting_pod_is_an_error(world):
    nodes = [world.node("n1")]
    pod = world.pod("huge", requests={"cpu": "64"})
    world.extender.filter(filter_args(pod, nodes))
    before = world.state()
    assert "is Waiting" in call(world, "bind", bind_args(pod, "n1"))[1]["Error"]
    assert world.state() == before


def test_bind_of_a_pod_never_filtered_is_refused(world):
    world.node("n1")
    pod = world.pod("p")
    status, result = call(world, "bind", bind_args(pod, "n1"))
    assert status == 400 and "filter it first" in result["Error"]


# --- pods the cluster does not have --------------------------------------------------------

def stranger(world, name="ghost"):
    """A pod in a call that the owner's watch has never shown."""
    from simcluster.generate import make_pod
    return make_pod(name, uid=f"uid-{name}", requests={"cpu": "1"})


def test_a_pod_unknown_to_the_cluster_is_never_assumed_or_tracked(world):
    nodes = [world.node("n1")]
    pod = stranger(world)
    before = world.state()
    for verb, body in (("filter", filter_args(pod, nodes)), ("bind", bind_args(pod, "n1")),
                       ("preempt", preempt_args(pod, {"n1": []}))):
        status, result = call(world, verb, body)
        assert status == 400 and "has seen from the API server" in result["Error"], verb
    assert world.state() == before


def test_a_known_uid_under_another_name_is_refused(world):
    nodes = [world.node("n1")]
    pod = world.pod("real")
    forged = wire(dict(pod, metadata=dict(pod["metadata"], name="forged")))
    status, result = call(world, "filter", filter_args(forged, nodes))
    assert status == 400 and "not default/forged" in result["Error"]
    assert "uid-real" not in world.statuses


def test_a_pod_assumed_by_someone_else_keeps_its_placement(world):
    nodes = [world.node("n1"), world.node("n2")]
    pod = world.pod("p", requests={"cpu": "1"})
    world.cache.assume_pod(dict(pod, spec=dict(pod["spec"], nodeName="n2")))  # an operator
    assert result_names(world.extender.filter(filter_args(pod, nodes))) == ["n2"]
    assert world.statuses.get("uid-p").state == "Binding"
    assert call(world, "bind", bind_args(pod, "n2")) == (200, {"Error": ""})


# --- preempt ------------------------------------------------------------------------------------

def crowded(world):
    """n1: two low-priority pods and a peer; n2: a high-priority pod; 4 cpu each."""
    nodes = [world.node("n1"), world.node("n2")]
    world.running("low1", "n1", requests={"cpu": "1500m"}, priority=1)
    world.running("low2", "n1", requests={"cpu": "1500m"}, priority=2)
    world.running("peer", "n1", requests={"cpu": "500m"}, priority=100)   # equal: never a victim
    world.running("high", "n2", requests={"cpu": "3500m"}, priority=1000)
    return nodes


def test_preempt_for_a_pod_never_filtered_answers_the_algorithms_victims(world):
    # 03a: kube-scheduler's own filters left no node, so preempt is its first call.
    crowded(world)
    pod = world.pod("vip", requests={"cpu": "3"}, priority=100)
    status, result = call(world, "preempt",
                          preempt_args(pod, {"n1": ["uid-peer", "uid-low2"], "n2": ["uid-high"]}))
    assert status == 200 and set(result["NodeNameToMetaVictims"]) == {"n1"}
    victims = result["NodeNameToMetaVictims"]["n1"]
    assert sorted(p["UID"] for p in victims["Pods"]) == ["uid-low1", "uid-low2"]
    assert victims["NumPDBViolations"] == 0
    assert world.statuses.get("uid-vip").state == "Preempting"


def test_preempt_takes_whole_pods_without_node_cache(world):
    # 03f: nodeCacheCapable false sends NodeNameToVictims with whole pods.
    crowded(world)
    pod = world.pod("vip", requests={"cpu": "3"}, priority=100)
    low = world.cache.get_pod({"metadata": {"uid": "uid-low1"}})
    body = wire({"Pod": pod, "NodeNameToMetaVictims": None,
                 "NodeNameToVictims": {"n1": {"Pods": [low], "NumPDBViolations": 0}}})
    status, result = call(world, "preempt", body)
    assert status == 200 and set(result["NodeNameToMetaVictims"]) == {"n1"}


def test_preempt_chooses_only_among_the_nodes_sent(world):
    crowded(world)
    world.node("n3")
    world.running("low3", "n3", requests={"cpu": "3500m"}, priority=1)
    pod = world.pod("vip", requests={"cpu": "3"}, priority=100)
    _, result = call(world, "preempt", preempt_args(pod, {"n3": ["uid-low3"]}))
    assert result["NodeNameToMetaVictims"] == {
        "n3": {"Pods": [{"UID": "uid-low3"}], "NumPDBViolations": 0}}


def test_preempt_that_cannot_help_names_no_node_and_says_why(world):
    # 03d: an empty answer means no preemption; the reasons are the pod's Waiting status.
    crowded(world)
    pod = world.pod("meek", requests={"cpu": "3"}, priority=0)   # nothing below it
    status, result = call(world, "preempt", preempt_args(pod, {"n1": ["uid-low1"]}))
    assert (status, result) == (200, {"NodeNameToMetaVictims": {}})
    status = world.statuses.get("uid-meek")
    assert status.state == "Waiting" and "preemption cannot help" in status.wait_reasons["n1"]


def test_preempt_leaves_out_victims_already_gone(world):
    nodes = crowded(world)
    pod = world.pod("vip", requests={"cpu": "3"}, priority=100)
    world.extender.filter(filter_args(pod, nodes))
    assert world.statuses.state("uid-vip") == "Preempting"
    world.cache.remove_pod(world.cache.get_pod({"metadata": {"uid": "uid-low1"}}))
    _, result = call(world, "preempt", preempt_args(pod, {"n1": ["uid-low2"]}))
    assert [p["UID"] for p in result["NodeNameToMetaVictims"]["n1"]["Pods"]] == ["uid-low2"]


def test_preempt_for_a_placed_pod_has_no_victims(world):
    pod, _ = placed(world)
    assert call(world, "preempt", preempt_args(pod, {"n1": []})) == (
        200, {"NodeNameToMetaVictims": {}})


def test_a_malformed_victims_map_is_refused(world):
    crowded(world)
    pod = world.pod("vip", requests={"cpu": "3"}, priority=100)
    before = world.state()
    status, result = call(world, "preempt", {"Pod": pod, "NodeNameToMetaVictims": [1]})
    assert status == 400 and "NodeNameToMetaVictims must be an object" in result["Error"]
    assert world.state() == before
