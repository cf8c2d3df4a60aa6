"""Malformed requests and unknown pods: ExtenderUserError, and nothing changed."""
import copy

import pytest

from simcluster.generate import make_pod

from dashboard.owner.extender import ExtenderUserError
from tests.dashboard.owner.extender.extender_builders import bind_args, filter_args, preempt_args


@pytest.fixture
def busy(world):
    """A world with a Binding, a Waiting and a Preempting pod, so refusals have things to break."""
    nodes = [world.node("n1"), world.node("n2")]
    world.running("low", "n2", requests={"cpu": "3"}, priority=1)
    world.extender.filter(filter_args(world.pod("placed", requests={"cpu": "3"}), nodes))
    world.extender.filter(filter_args(world.pod("waits", requests={"cpu": "64"}), nodes))
    world.extender.filter(filter_args(world.pod("vip", requests={"cpu": "2"}, priority=50), nodes))
    assert world.statuses.counts() == {"Waiting": 1, "Preempting": 1, "Binding": 1, "Bound": 0}
    return world, nodes


def _without_uid(pod):
    pod = copy.deepcopy(pod)
    del pod["metadata"]["uid"]
    return pod


def filter_bodies(world, nodes):
    pod = world.pod("fresh", requests={"cpu": "1"})
    good = filter_args(pod, nodes)
    return {
        "not an object": ["Pod"],
        "no Pod": {"Nodes": None, "NodeNames": ["n1"]},
        "Pod null": dict(good, Pod=None),
        "Pod a string": dict(good, Pod="fresh"),
        "no uid": dict(good, Pod=_without_uid(pod)),
        "empty uid": dict(good, Pod=dict(pod, metadata=dict(pod["metadata"], uid=""))),
        "no metadata": dict(good, Pod={"spec": pod["spec"]}),
        "no name": dict(good, Pod=dict(pod, metadata={"uid": "x"})),
        "spec a list": dict(good, Pod=dict(pod, spec=[])),
        "no candidates": {"Pod": pod, "Nodes": None, "NodeNames": None},
        "NodeNames a string": dict(good, NodeNames="n1"),
        "NodeNames with a number": dict(good, NodeNames=["n1", 2]),
        "NodeNames with an empty name": dict(good, NodeNames=["n1", ""]),
        "NodeNames with an object": dict(good, NodeNames=["n1", {"name": "n2"}]),
        "Nodes a list": {"Pod": pod, "Nodes": [], "NodeNames": None},
        "Nodes items an object": {"Pod": pod, "Nodes": {"items": {}}, "NodeNames": None},
        "a Node without a name": {"Pod": pod, "Nodes": {"items": [{"metadata": {}}]},
                                  "NodeNames": None},
    }


def test_malformed_filter_requests_are_user_errors_and_change_nothing(busy):
    world, nodes = busy
    for label, body in filter_bodies(world, nodes).items():
        before = world.state()
        with pytest.raises(ExtenderUserError) as caught:
            world.extender.filter(body)
        assert str(caught.value), label
        assert world.state() == before, label


def test_missing_uid_message_is_clear(busy):
    world, nodes = busy
    body = filter_bodies(world, nodes)["no uid"]
    with pytest.raises(ExtenderUserError, match=r"Pod\.metadata\.uid is missing"):
        world.extender.filter(body)


def test_malformed_and_unknown_bind_requests_are_user_errors(busy):
    world, _ = busy
    pod = world.pod("placed")
    good = bind_args(pod, world.statuses.get("uid-placed").node)
    bodies = {
        "not an object": "bind",
        "no PodUID": {k: v for k, v in good.items() if k != "PodUID"},
        "empty PodUID": dict(good, PodUID=""),
        "no Node": dict(good, Node=None),
        "PodName a number": dict(good, PodName=7),
        "unknown pod": dict(good, PodUID="uid-nobody"),
    }
    for label, body in bodies.items():
        before = world.state()
        with pytest.raises(ExtenderUserError):
            world.extender.bind(body)
        assert world.state() == before, label
    with pytest.raises(ExtenderUserError, match="has seen from the API server"):
        world.extender.bind(bodies["unknown pod"])


def test_malformed_and_unknown_preempt_requests_are_user_errors(busy):
    world, _ = busy
    vip = world.pod("vip", priority=50)
    bodies = {
        "no Pod": {"NodeNameToMetaVictims": {}},
        "no uid": preempt_args(_without_uid(vip), {}),
        "victims a list": dict(preempt_args(vip, {}), NodeNameToMetaVictims=[]),
        "unknown pod": preempt_args(make_pod("stranger", uid="uid-stranger"), {}),
    }
    for label, body in bodies.items():
        before = world.state()
        with pytest.raises(ExtenderUserError):
            world.extender.preempt(body)
        assert world.state() == before, label


def test_keys_match_case_insensitively_like_gos_decoder(world):
    nodes = [world.node("n1")]
    pod = world.pod("p", requests={"cpu": "1"})
    result = world.extender.filter({"pod": pod, "nodenames": ["n1"]})
    assert result["NodeNames"] == ["n1"]
    assert world.statuses.state("uid-p") == "Binding"
    assert nodes
