"""PodScheduleStatuses: HiveD's transitions, refusals, rebuild from annotations."""
import json

import pytest

from dashboard.owner.extender import PodScheduleStatuses, TransitionError, Victim
from dashboard.owner.extender.statuses import ALLOWED
from dashboard.wire.extender import BIND_INFO_ANNOTATION, bind_info_annotation
from tests.dashboard.owner.extender.extender_builders import Bindings, bind_args, call, filter_args


def make(state):
    """Statuses holding pod "u" in `state` (reached by allowed transitions)."""
    statuses = PodScheduleStatuses()
    if state == "Unknown":
        return statuses
    if state == "Bound":
        statuses.bound("u", "ns", "p", node="n1")
        return statuses
    statuses.wait("u", "ns", "p", {"n1": "full"})
    if state == "Preempting":
        statuses.preempt("u", node="n1", victims={"n1": [Victim("v1", "ns", "low", 1)]})
    elif state == "Binding":
        statuses.binding("u", node="n1")
    return statuses


ALL = ("Unknown", "Waiting", "Preempting", "Binding", "Bound")
MOVES = {"Waiting": lambda s: s.wait("u", reasons={}),
         "Preempting": lambda s: s.preempt("u", node="n1", victims={}),
         "Binding": lambda s: s.binding("u", node="n1"),
         "Bound": lambda s: s.bound("u", node="n1")}


@pytest.mark.parametrize("from_state", ALL)
@pytest.mark.parametrize("to_state", list(MOVES))
def test_only_hiveds_transitions_are_allowed(from_state, to_state):
    statuses = make(from_state)
    before = statuses.dump()
    if to_state in ALLOWED[from_state]:
        MOVES[to_state](statuses)
        assert statuses.state("u") == to_state
    else:
        with pytest.raises(TransitionError, match=f"{from_state} -> {to_state} is not allowed"):
            MOVES[to_state](statuses)
        assert statuses.dump() == before


def test_refusal_names_the_pod_and_what_is_allowed():
    statuses = make("Binding")
    with pytest.raises(TransitionError) as caught:
        statuses.wait("u")
    assert str(caught.value) == ("pod ns/p (u): Binding -> Waiting is not allowed "
                                 "(Binding may go to Bound)")
    with pytest.raises(TransitionError, match=r"Bound -> Binding is not allowed \(Bound may go "
                                              r"to nothing"):
        make("Bound").binding("u", node="n1")


def test_any_state_may_become_unknown():
    for state in ALL[1:]:
        statuses = make(state)
        assert statuses.remove("u").state == state
        assert statuses.state("u") == "Unknown"


def test_bound_keeps_the_binding_node_and_refuses_another():
    statuses = make("Binding")
    with pytest.raises(TransitionError, match="cannot become Bound on 'n2'"):
        statuses.bound("u", node="n2")
    assert statuses.state("u") == "Binding"
    statuses.bound("u")
    assert statuses.get("u").node == "n1"


def test_bind_attempts_count_only_while_binding():
    statuses = make("Waiting")
    with pytest.raises(TransitionError, match="only a Binding pod counts"):
        statuses.count_bind_attempt("u")
    statuses.binding("u", node="n1")
    assert [statuses.count_bind_attempt("u") for _ in range(3)] == [1, 2, 3]


def _annotated(world, name, node, *, bound, raw=None):
    pod = world.pod(name, node_name=node if bound else None)
    annotations = {BIND_INFO_ANNOTATION: raw} if raw is not None else bind_info_annotation(node)
    pod["metadata"]["annotations"] = dict(pod["metadata"].get("annotations") or {},
                                          **annotations)
    return pod


def test_statuses_are_rebuilt_from_bind_info_annotations(world):
    pods = [_annotated(world, "done", "n1", bound=True),
            _annotated(world, "inflight", "n2", bound=False),
            world.pod("plain"),
            world.pod("plain-bound", node_name="n1"),
            _annotated(world, "garbled", "n1", bound=False, raw="{not json"),
            _annotated(world, "nonode", "n1", bound=False, raw=json.dumps({"node": ""}))]
    statuses = PodScheduleStatuses()
    statuses.wait("stale", "ns", "old")
    counts = statuses.rebuild(pods)
    assert counts == {"Waiting": 0, "Preempting": 0, "Binding": 1, "Bound": 1}
    assert statuses.get("uid-done").state == "Bound" and statuses.get("uid-done").node == "n1"
    inflight = statuses.get("uid-inflight")
    assert inflight.state == "Binding" and inflight.node == "n2"
    assert inflight.pod["spec"]["nodeName"] == "n2"
    assert set(statuses.dump()) == {"uid-done", "uid-inflight"}      # "stale" is gone


def test_restore_assumes_binding_pods_and_binding_resumes(world):
    world.node("n1")
    world.node("n2")
    done = _annotated(world, "done", "n1", bound=True)
    world.cache.add_pod(done)                           # the relist already holds it
    inflight = _annotated(world, "inflight", "n2", bound=False)
    assert world.extender.restore([done, inflight])["Binding"] == 1
    assert world.cache.is_assumed_pod(inflight)
    # through the owner's door, recorded as the relist's (a pod list's end restores)
    assert [(e.kind, cause, actor) for e, cause, actor, _, _ in world.journal.take()[0]
            if e.key == "uid-inflight"] == [("pod_assumed", "relist", "")]
    assert world.cache.get_pod(inflight)["spec"]["nodeName"] == "n2"
    # kube-scheduler filters it again: the same node; and its bind goes through.
    result = world.extender.filter(filter_args(inflight, list(world.nodes.values())))
    assert result["NodeNames"] == ["n2"]
    bindings = Bindings()
    assert call(world, "bind", bind_args(inflight, "n2"), bindings) == (200, {"Error": ""})
    assert bindings.posted == [("uid-inflight", "default", "inflight", "n2")]


def test_bind_info_annotation_is_json_with_the_node():
    value = bind_info_annotation("n7")[BIND_INFO_ANNOTATION]
    assert json.loads(value) == {"node": "n7"}
