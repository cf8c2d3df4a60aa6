"""The owner's command handlers: results pass through, user errors become 400s."""
import pytest

from dashboard.owner.extender.handlers import OPS, command_handlers, verb_handlers
from dashboard.wire.commands import CommandError
from tests.dashboard.owner.extender.extender_builders import bind_args, filter_args


def test_handlers_forward_and_refuse_with_400(world):
    handlers, verbs = command_handlers(world.extender), verb_handlers(world.extender)
    assert set(handlers) == set(OPS)
    nodes = [world.node("n1")]
    pod = world.pod("p", requests={"cpu": "1"})
    assert verbs["extender_filter"](filter_args(pod, nodes), "kube-scheduler")["NodeNames"] \
        == ["n1"]
    plan = verbs["extender_bind"](bind_args(pod, "n1"), "kube-scheduler")
    assert plan.pod == ("uid-p", "default", "p", "n1")
    assert verbs["extender_bind_outcome"]({"uid": "uid-p", "node": "n1", "bound": True,
                                           "reason": "bound"}, "kube-scheduler") == {"Error": ""}
    assert handlers["extender_status"]({"uid": "uid-p"}, "alice")["state"] == "Binding"
    assert handlers["extender_status"]({"uid": "nope"}, "alice") == {"uid": "nope",
                                                                      "state": "Unknown"}
    with pytest.raises(CommandError) as caught:
        verbs["extender_filter"]({"Pod": {"metadata": {}}, "NodeNames": []}, "x")
    assert caught.value.status == 400 and "uid" in caught.value.message
    with pytest.raises(CommandError) as caught:
        verbs["extender_bind"](dict(bind_args(pod, "n1"), PodUID="ghost"), "x")
    assert caught.value.status == 400


def test_kube_schedulers_verbs_are_not_redis_commands(world):
    """Only the owner's listener may call them: nothing reaches them over Redis."""
    assert not set(command_handlers(world.extender)) & set(verb_handlers(world.extender))


@pytest.fixture
def handlers_over_three_states(world):
    """Two pods Binding (b, a), one Waiting (c: too big), in namespace default."""
    nodes = [world.node("n1")]
    for name, cpu in (("b", "1"), ("a", "1"), ("c", "64")):
        world.extender.filter(filter_args(world.pod(name, requests={"cpu": cpu}), nodes))
    return command_handlers(world.extender)


def test_statuses_page_filters_by_state_and_pages_by_name(handlers_over_three_states):
    page = handlers_over_three_states["extender_statuses"]
    everything = page({}, "alice")
    assert everything["total"] == 3
    assert everything["counts"] == {"Waiting": 1, "Preempting": 0, "Binding": 2, "Bound": 0}
    assert [s["name"] for s in everything["items"]] == ["a", "b", "c"]
    binding = page({"state": "Binding", "offset": 1, "limit": 1}, "alice")
    assert binding["total"] == 2 and [s["name"] for s in binding["items"]] == ["b"]
    [waiting] = page({"state": "Waiting"}, "alice")["items"]
    assert waiting["reasons"] == {"Insufficient cpu": 1}
    assert "wait_reasons" not in waiting          # the page carries the counts only


def test_one_status_by_namespace_and_name(handlers_over_three_states):
    status = handlers_over_three_states["extender_status"]
    found = status({"namespace": "default", "name": "c"}, "alice")
    assert found["state"] == "Waiting" and found["wait_reasons"] == {"n1": "Insufficient cpu"}
    with pytest.raises(CommandError) as caught:
        status({"namespace": "other", "name": "c"}, "alice")
    assert caught.value.status == 404


@pytest.mark.parametrize("op, args", [
    ("extender_statuses", {"state": "Sleeping"}),
    ("extender_statuses", {"limit": 5000}),
    ("extender_statuses", {"offset": -1}),
    ("extender_statuses", {"limit": True}),
    ("extender_statuses", {"offset": "1"}),
    ("extender_status", {"uid": ""}),
    ("extender_status", {"namespace": "default"}),
    ("extender_status", {"namespace": 3, "name": "c"}),
])
def test_bad_status_queries_are_400s(handlers_over_three_states, op, args):
    with pytest.raises(CommandError) as caught:
        handlers_over_three_states[op](args, "alice")
    assert caught.value.status == 400
