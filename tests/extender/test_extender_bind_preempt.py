"""bind (once, idempotent, node mismatch), confirmation, and preempt's MetaVictims."""
from extender_builders import bind_args, filter_args, preempt_args, result_names


def placed(world, name="p", cpu="1", nodes=None):
    nodes = nodes or [world.node("n1"), world.node("n2")]
    pod = world.pod(name, requests={"cpu": cpu})
    node = result_names(world.extender.filter(filter_args(pod, nodes)))[0]
    return pod, node


def test_bind_of_the_placed_pod_on_its_node_queues_one_bind(world):
    pod, node = placed(world)
    assert world.extender.bind(bind_args(pod, node)) == {"Error": ""}
    assert world.binds.calls == [("uid-p", "default", "p", node)]
    assert world.statuses.state("uid-p") == "Binding"       # Bound only when confirmed

    assert world.extender.bind(bind_args(pod, node)) == {"Error": ""}   # kube-scheduler retried
    assert len(world.binds.calls) == 1


def test_pod_becomes_bound_when_the_watch_confirms_it(world):
    pod, node = placed(world)
    world.extender.bind(bind_args(pod, node))
    world.cache.add_pod(dict(pod, spec=dict(pod["spec"], nodeName=node)))  # the watch
    status = world.statuses.get("uid-p")
    assert status.state == "Bound" and status.node == node
    assert world.extender.bind(bind_args(pod, node)) == {"Error": ""}
    assert len(world.binds.calls) == 1
    assert world.extender.confirmed("uid-p", node) is False          # already Bound


def test_confirmed_can_be_called_directly(world):
    pod, node = placed(world)
    assert world.extender.confirmed("uid-p") is True
    assert world.statuses.state("uid-p") == "Bound"
    assert world.extender.confirmed("uid-unknown") is False
    assert "uid-unknown" not in world.statuses


def test_force_bound_pod_is_not_bound_twice_by_kube_schedulers_bind(world):
    nodes = [world.node("n1")]
    pod, node = placed(world, nodes=nodes)
    for _ in range(3):
        world.extender.filter(filter_args(pod, nodes))
    assert len(world.binds.calls) == 1
    assert world.extender.bind(bind_args(pod, node)) == {"Error": ""}
    assert len(world.binds.calls) == 1


def test_bind_on_another_node_is_an_error_and_changes_nothing(world):
    pod, node = placed(world)
    other = "n2" if node == "n1" else "n1"
    before = world.state()
    result = world.extender.bind(bind_args(pod, other))
    assert f"placed on node {node}, not {other}" in result["Error"]
    assert world.state() == before


def test_bind_of_a_waiting_pod_is_an_error(world):
    nodes = [world.node("n1")]
    pod = world.pod("huge", requests={"cpu": "64"})
    world.extender.filter(filter_args(pod, nodes))
    before = world.state()
    assert "is Waiting" in world.extender.bind(bind_args(pod, "n1"))["Error"]
    assert world.state() == before


def test_bind_whose_queueing_fails_reports_error_and_may_be_retried(world):
    pod, node = placed(world)
    world.binds.fail = ConnectionError("broker down")
    result = world.extender.bind(bind_args(pod, node))
    assert "broker down" in result["Error"]
    assert not world.statuses.get("uid-p").bind_requested
    world.binds.fail = None
    assert world.extender.bind(bind_args(pod, node)) == {"Error": ""}
    assert world.binds.calls == [("uid-p", "default", "p", node)]


def preempting(world):
    nodes = [world.node("n1"), world.node("n2")]
    world.running("low1", "n1", requests={"cpu": "1500m"}, priority=1)
    world.running("low2", "n1", requests={"cpu": "1500m"}, priority=2)
    world.running("peer", "n1", requests={"cpu": "500m"}, priority=100)   # equal: never a victim
    world.running("high", "n2", requests={"cpu": "3500m"}, priority=1000)
    pod = world.pod("vip", requests={"cpu": "3"}, priority=100)
    world.extender.filter(filter_args(pod, nodes))
    return pod


def test_preempt_returns_the_lower_priority_victims_as_meta_pods(world):
    pod = preempting(world)
    assert world.statuses.state("uid-vip") == "Preempting"
    # kube-scheduler proposes its own victims; the extender answers its own.
    result = world.extender.preempt(preempt_args(pod, {"n1": ["uid-peer"], "n2": ["uid-high"]}))
    assert set(result) == {"NodeNameToMetaVictims"}
    victims = result["NodeNameToMetaVictims"]
    assert set(victims) == {"n1"}
    assert victims["n1"]["NumPDBViolations"] == 0
    uids = sorted(p["UID"] for p in victims["n1"]["Pods"])
    assert uids == ["uid-low1", "uid-low2"]
    for uid in uids:
        assert world.cache.pod_info(uid).priority < 100


def test_preempt_leaves_out_victims_already_gone(world):
    pod = preempting(world)
    world.cache.remove_pod(world.cache.get_pod({"metadata": {"uid": "uid-low1"}}))
    result = world.extender.preempt(preempt_args(pod, {}))
    assert [p["UID"] for p in result["NodeNameToMetaVictims"]["n1"]["Pods"]] == ["uid-low2"]


def test_preempt_for_a_pod_not_preempting_has_no_victims(world):
    pod, _ = placed(world)
    assert world.extender.preempt(preempt_args(pod, {"n1": []})) == {"NodeNameToMetaVictims": {}}


def test_preempt_accepts_the_non_cache_capable_form(world):
    pod = preempting(world)
    body = {"Pod": pod, "NodeNameToVictims": {"n1": {"Pods": [pod], "NumPDBViolations": 0}},
            "NodeNameToMetaVictims": None}
    assert set(world.extender.preempt(body)["NodeNameToMetaVictims"]) == {"n1"}
