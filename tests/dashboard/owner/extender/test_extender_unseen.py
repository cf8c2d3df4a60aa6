"""A pod kube-scheduler names before the owner's watch has shown it is waited for, not
refused (issue 23, item 3: on a real control plane kube-scheduler's informer saw new pods
first, and a refused preempt left the pod unschedulable for 124 s: shared k8s-wire/extender
04a, "no retry"); and the extender decides on the pod as the watch shows it, never as the
body claims (issue 22, item 8).

The calls go through OwnerCalls as the listener hands them over, answered by the rules of
answers.py; the owner's thread is this test's, which calls `serve` as the runner's loop does."""
import copy
import logging
import threading
import uuid

import orjson
import pytest

from simcluster.generate import make_pod

from dashboard.owner.extender.answers import answer
from dashboard.owner.extender.handlers import verb_handlers
from dashboard.owner.extender.owner_calls import MAX_PARKED, OwnerCalls
from tests.dashboard.owner.extender.extender_builders import (
    Bindings,
    call,
    filter_args,
    preempt_args,
    result_names,
)
from tests.waiting import wait_for

WAIT = 3.0


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


class Caller:
    """A listener worker's call in a thread of its own: (status, answer) once it returns."""

    def __init__(self, calls, verb, body):
        self.answered = []
        self.thread = threading.Thread(target=lambda: self.answered.append(answer(
            f"extender_{verb}", orjson.dumps(body), lambda op, args: calls.call(op, args, 5),
            Bindings())))
        self.thread.start()

    def result(self):
        self.thread.join(5)
        assert not self.thread.is_alive(), "the call was never answered"
        return self.answered[0]


@pytest.fixture
def owner_side(world):
    clock = Clock()
    calls = OwnerCalls(verb_handlers(world.extender), "kube-scheduler",
                       seen=world.known.__contains__, unseen_wait=WAIT, clock=clock)
    return calls, clock


def crowded(world):
    """n1: a low-priority pod using most of it; n2: a high-priority one."""
    nodes = [world.node("n1"), world.node("n2")]
    world.running("low", "n1", requests={"cpu": "3"}, priority=1)
    world.running("high", "n2", requests={"cpu": "3"}, priority=1000)
    return nodes


def new_pod(name, **kwargs):
    """A pod the API server has (a uid of the API server's form, a UUID), which the owner's
    watch has not shown yet."""
    return make_pod(name, uid=str(uuid.uuid5(uuid.NAMESPACE_DNS, name)), **kwargs)


def served_until_parked(calls):
    """The owner's turns until the caller's call is parked (it was run, and waits)."""
    wait_for(lambda: calls.serve() or calls.parked, 5, "the call to be parked")


VERBS = {
    # verb: (the pod, its body, what the answer must say)
    "filter": (lambda nodes: new_pod("fit-0", requests={"cpu": "500m"}),
               lambda pod, nodes: filter_args(pod, nodes),
               lambda result: len(result_names(result)) == 1),
    "preempt": (lambda nodes: new_pod("vip", requests={"cpu": "2"}, priority=100),
                lambda pod, nodes: preempt_args(pod, {"n1": ["uid-low"]}),
                lambda result: result["NodeNameToMetaVictims"] == {
                    "n1": {"Pods": [{"UID": "uid-low"}], "NumPDBViolations": 0}}),
}


@pytest.mark.parametrize("verb", VERBS)
def test_a_pod_the_watch_shows_a_moment_after_the_call_is_answered(world, owner_side, verb):
    calls, clock = owner_side
    nodes = crowded(world)
    make, body, expected = VERBS[verb]
    pod = make(nodes)
    caller = Caller(calls, verb, body(pod, nodes))
    served_until_parked(calls)
    clock.now += WAIT / 2
    calls.serve()                                  # not shown yet, not past the wait
    assert caller.thread.is_alive() and calls.parked == 1
    world.known[pod["metadata"]["uid"]] = pod      # the watch shows it
    assert calls.serve() == 1
    status, result = caller.result()
    assert status == 200 and expected(result), result
    assert calls.parked == 0


@pytest.mark.parametrize("verb", VERBS)
def test_a_uid_that_never_appears_is_refused_after_the_wait_and_logged(world, owner_side, verb,
                                                                      caplog):
    calls, clock = owner_side
    nodes = crowded(world)
    make, body, _ = VERBS[verb]
    pod = make(nodes)
    before = world.state()
    caplog.set_level(logging.WARNING, "dashboard.owner.extender.answers")
    caller = Caller(calls, verb, body(pod, nodes))
    served_until_parked(calls)
    calls.serve()
    assert caller.thread.is_alive()
    clock.now += WAIT
    calls.serve()
    status, result = caller.result()
    assert status == 400
    assert result["Error"].endswith(f"the owner's watch did not show it within {WAIT:g} s")
    name, uid = pod["metadata"]["name"], pod["metadata"]["uid"]
    [record] = [r for r in caplog.records if "refused" in r.getMessage()]
    assert record.getMessage().startswith(
        f"extender {verb} refused (pod default/{name} ({uid})): pod default/{name}")
    assert world.state() == before


def test_the_parked_calls_are_bounded_and_a_closing_owner_answers_them(world, owner_side):
    calls, _ = owner_side
    nodes = crowded(world)
    callers = []
    for i in range(MAX_PARKED):
        callers.append(Caller(calls, "filter", filter_args(new_pod(f"ghost-{i}"), nodes)))
        wait_for(lambda: calls.serve() or calls.parked == i + 1, 5, f"{i + 1} parked calls")
    over = Caller(calls, "filter", filter_args(new_pod("one-more"), nodes))
    wait_for(lambda: calls.serve(), 5, "the call over the bound")
    status, result = over.result()
    assert status == 400 and result["Error"].endswith(
        f"{MAX_PARKED} calls already wait for pods the watch has not shown")
    assert calls.parked == MAX_PARKED
    calls.close()                  # the listener closes: nobody is left waiting
    for caller in callers:
        status, result = caller.result()
        assert status == 200 and result["Error"] == "the cache owner has stopped"


@pytest.mark.parametrize("uid", ["uid-made-up", "' OR '1'='1", "79D4A8C2-0000-4000-8000-0000000000"
                                 "01"])
def test_a_uid_the_api_server_would_never_give_is_refused_at_once(world, owner_side, uid):
    """Not a UUID: the watch can never show it, so it holds no worker for the wait."""
    calls, _ = owner_side
    nodes = crowded(world)
    caller = Caller(calls, "filter", filter_args(make_pod("odd", uid=uid), nodes))
    wait_for(lambda: calls.serve(), 5, "the call")
    status, result = caller.result()
    assert status == 400 and result["Error"].endswith(
        "never will be: its uid is not a UUID, the only form the API server gives")
    assert calls.parked == 0


def test_without_a_wait_an_unseen_pod_is_refused_at_once(world):
    calls = OwnerCalls(verb_handlers(world.extender), "kube-scheduler",
                       seen=world.known.__contains__, unseen_wait=0)
    nodes = crowded(world)
    caller = Caller(calls, "filter", filter_args(new_pod("ghost"), nodes))
    wait_for(lambda: calls.serve(), 5, "the call")
    status, result = caller.result()
    assert status == 400 and "not a pod the cache owner has seen" in result["Error"]


# --- the pod as the watch shows it ---------------------------------------------------------
def _tampered(pod, change):
    body_pod = copy.deepcopy(pod)
    change(body_pod)
    return body_pod


TAMPERED = {
    "nodeSelector removed": (dict(node_selector={"disk": "ssd"}),
                             lambda p: p["spec"].pop("nodeSelector")),
    "requests lowered": (dict(requests={"cpu": "64"}),
                         lambda p: p["spec"]["containers"][0]["resources"].update(
                             requests={"cpu": "100m"})),
    "a toleration added": (dict(requests={"cpu": "100m"}),
                           lambda p: p["spec"].setdefault("tolerations", []).append(
                               {"key": "dedicated", "operator": "Exists",
                                "effect": "NoSchedule"})),
}


@pytest.mark.parametrize("case", TAMPERED)
def test_a_filter_decides_on_the_watched_pod_not_the_bodys(world, case):
    """n1 has no ssd label, 4 cpu and a taint only the tampered body tolerates: the real pod
    fits nowhere; the body's pod would fit n1."""
    node = world.node("n1", taints=[{"key": "dedicated", "value": "x",
                                     "effect": "NoSchedule"}] if case == "a toleration added"
                      else None)
    spec, change = TAMPERED[case]
    pod = world.pod("guarded", **spec)            # as the watch shows it
    before = world.state()
    status, result = call(world, "filter", filter_args(_tampered(pod, change), [node]))
    assert status == 200 and result_names(result) == [], result
    assert list(result["FailedNodes"]) == ["n1"]
    assert not world.cache.is_assumed_pod(pod)
    assert world.state()[:4] == before[:4]        # the cache unchanged (the pod Waiting)
    # and the untampered body answers the same: the body's spec was never read
    assert call(world, "filter", filter_args(pod, [node]))[1]["FailedNodes"].keys() == {"n1"}


def test_a_preempt_decides_on_the_watched_pods_priority_not_the_bodys(world):
    crowded(world)
    pod = world.pod("meek", requests={"cpu": "2"}, priority=0)
    claimed = _tampered(pod, lambda p: p["spec"].update(priority=100000))
    status, result = call(world, "preempt", preempt_args(claimed, {"n1": ["uid-low"]}))
    assert (status, result) == (200, {"NodeNameToMetaVictims": {}})
    assert world.statuses.get("uid-meek").state == "Waiting"
