"""Every filter and its kube-scheduler reason string, table-driven."""
import pytest

from scheduling import predicates as pr
from scheduling.podview import PodView
from simcluster.generate import make_node

from tests.scheduling.sched_builders import node_record, pod, view

GPU = "nvidia.com/gpu"


def small_node(name="n1", **kwargs):
    kwargs.setdefault("cpu", "4")
    kwargs.setdefault("memory", "8Gi")
    kwargs.setdefault("allocatable", {"cpu": "4", "memory": "8Gi", "pods": "3",
                                      "ephemeral-storage": "10Gi", GPU: "2"})
    return make_node(name, **kwargs)


@pytest.mark.parametrize("pending, bound, expected", [
    (dict(requests={"cpu": "1"}), [], None),
    (dict(requests={"cpu": "4"}), [], None),
    (dict(requests={"cpu": "4001m"}), [], "Insufficient cpu"),
    (dict(requests={"cpu": "2"}), [dict(requests={"cpu": "2500m"})], "Insufficient cpu"),
    (dict(requests={"memory": "9Gi"}), [], "Insufficient memory"),
    (dict(requests={"ephemeral-storage": "11Gi"}), [], "Insufficient ephemeral-storage"),
    (dict(requests={"cpu": "5", "memory": "9Gi"}), [], "Insufficient cpu, Insufficient memory"),
    (dict(requests={GPU: "2"}), [], None),
    (dict(requests={GPU: "1"}), [dict(requests={GPU: "2"})], f"Insufficient {GPU}"),
    (dict(requests={"example.com/fpga": "1"}), [], "Insufficient example.com/fpga"),
    (dict(), [dict(), dict(), dict()], "Too many pods"),
    (dict(requests={"cpu": "2"}), [dict(requests={"cpu": "1"})] * 3,
     "Too many pods, Insufficient cpu"),
    # init containers: the largest init container counts when above the containers' sum
    (dict(requests={"cpu": "1"}, init_containers=[
        {"name": "i", "image": "x", "resources": {"requests": {"cpu": "5"}}}]), [],
     "Insufficient cpu"),
    (dict(requests={"cpu": "3"}, init_containers=[
        {"name": "i", "image": "x", "resources": {"requests": {"cpu": "4"}}}]), [], None),
    # overhead adds to the pod's request
    (dict(requests={"cpu": "3900m"}, overhead={"cpu": "200m"}), [], "Insufficient cpu"),
    (dict(requests={"cpu": "3800m"}, overhead={"cpu": "200m"}), [], None),
])
def test_resources_fit(pending, bound, expected):
    bound_pods = [pod(node_name="n1", **b) for b in bound]
    record = node_record(small_node(), bound_pods)
    assert pr.resources_fit(view(pod(**pending)), record) == expected


def test_ignored_extended_resources_are_left_out_of_the_fit():
    # kube-scheduler's NodeResourcesFitArgs.ignoredResources: an extender checks them (the
    # captures' 08 gpu-9 reached `filter` asking 9 GPUs no node had)
    record = node_record(small_node())
    asks = pod(requests={"example.com/fpga": "1", GPU: "3"})
    assert pr.resources_fit(PodView(asks, frozenset({"example.com/fpga"})), record) == (
        f"Insufficient {GPU}")
    assert pr.resources_fit(PodView(asks, frozenset({"example.com/fpga", GPU})), record) is None


def test_zero_request_pod_fits_an_overcommitted_node():
    # allocatable shrank below what is requested: a pod asking for no cpu still fits
    record = node_record(small_node(), [pod(node_name="n1", requests={"cpu": "4"})])
    record.free_cpu = -500
    assert pr.resources_fit(view(pod(requests={"memory": "1Gi"})), record) is None
    assert pr.resources_fit(view(pod(requests={"cpu": "1m"})), record) == "Insufficient cpu"


@pytest.mark.parametrize("used, wanted, conflict", [
    ([80], [80], True),
    ([80], [81], False),
    ([{"hostPort": 80, "protocol": "UDP"}], [80], False),
    ([{"hostPort": 80, "hostIP": "10.0.0.1"}], [{"hostPort": 80, "hostIP": "10.0.0.2"}], False),
    ([{"hostPort": 80, "hostIP": "10.0.0.1"}], [{"hostPort": 80, "hostIP": "10.0.0.1"}], True),
    ([{"hostPort": 80, "hostIP": "0.0.0.0"}], [{"hostPort": 80, "hostIP": "10.0.0.2"}], True),
    ([{"hostPort": 80, "hostIP": "10.0.0.2"}], [{"hostPort": 80, "hostIP": "0.0.0.0"}], True),
    ([{"hostPort": 80, "hostIP": "10.0.0.2"}], [80], True),   # empty ip means 0.0.0.0
    ([], [80], False),
])
def test_node_ports(used, wanted, conflict):
    record = node_record(make_node("n1"), [pod(node_name="n1", host_ports=used)] if used else [])
    reason = pr.node_ports(view(pod(host_ports=wanted)), record)
    assert reason == (pr.PORTS if conflict else None)
    assert pr.PORTS == "node(s) didn't have free ports for the requested pod ports"


@pytest.mark.parametrize("kwargs, expected", [
    ({}, None),
    ({"node_selector": {"disk": "ssd"}}, None),
    ({"node_selector": {"disk": "hdd"}}, "node(s) didn't match Pod's node affinity/selector"),
    ({"node_selector": {"gpu": "yes"}}, "node(s) didn't match Pod's node affinity/selector"),
])
def test_node_affinity_predicate(kwargs, expected):
    record = node_record(make_node("n1", labels={"disk": "ssd"}))
    assert pr.node_affinity(view(pod(**kwargs)), record) == expected


@pytest.mark.parametrize("taints, tolerations, expected", [
    ([], [], None),
    ([{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}], [],
     "node(s) had untolerated taint {dedicated: gpu}"),
    ([{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
     [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}], None),
    ([{"key": "soft", "value": "x", "effect": "PreferNoSchedule"}], [], None),
    ([{"key": "a", "value": "1", "effect": "NoSchedule"},
      {"key": "b", "value": "2", "effect": "NoExecute"}],
     [{"key": "a", "operator": "Exists"}], "node(s) had untolerated taint {b: 2}"),
])
def test_taint_toleration_predicate(taints, tolerations, expected):
    record = node_record(make_node("n1", taints=taints))
    assert pr.taint_toleration(view(pod(tolerations=tolerations)), record) == expected


def test_taint_verdict_is_memoised_per_taint_set_but_still_correct():
    tainted = node_record(make_node("n1", taints=[{"key": "k", "value": "v",
                                                    "effect": "NoSchedule"}]))
    twin = node_record(make_node("n2", taints=[{"key": "k", "value": "v",
                                                 "effect": "NoSchedule"}]))
    other = node_record(make_node("n3", taints=[{"key": "k", "value": "w",
                                                  "effect": "NoSchedule"}]))
    pending = view(pod(tolerations=[{"key": "k", "operator": "Equal", "value": "v"}]))
    assert tainted.taint_id == twin.taint_id != other.taint_id
    assert pr.taint_toleration(pending, tainted) is None
    assert pr.taint_toleration(pending, twin) is None
    assert pr.taint_toleration(pending, other) == "node(s) had untolerated taint {k: w}"


def test_unschedulable_node():
    node = make_node("n1")
    node["spec"]["unschedulable"] = True
    record = node_record(node)
    assert pr.node_unschedulable(view(pod()), record) == "node(s) were unschedulable"
    tolerant = pod(tolerations=[{"key": "node.kubernetes.io/unschedulable",
                                 "operator": "Exists", "effect": "NoSchedule"}])
    assert pr.node_unschedulable(view(tolerant), record) is None
    assert pr.node_unschedulable(view(pod()), node_record(make_node("n2"))) is None


def test_node_name_predicate():
    record = node_record(make_node("n1"))
    pending = pod()
    pending["spec"]["nodeName"] = "n2"
    assert pr.node_name(view(pending), record) == "node(s) didn't match the requested node name"
    pending["spec"]["nodeName"] = "n1"
    assert pr.node_name(view(pending), record) is None


def test_first_refusal_in_upstream_order():
    node = make_node("n1", labels={"disk": "ssd"},
                     taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}])
    record = node_record(node)
    pending = view(pod(requests={"cpu": "999"}, node_selector={"disk": "hdd"}))
    reason, check = pr.run(pr.for_pod(pending), pending, record)
    assert reason == "node(s) had untolerated taint {k: v}" and check is pr.taint_toleration
