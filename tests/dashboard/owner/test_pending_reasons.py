"""schedview_pending_pods{reason}: the owner's pending pods counted by their first reason
(dashboard/owner/pending_reasons.py), over the why-pending recording's cluster."""
import copy

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from schedcache import Cache
from schedcache.podinfo import make_pod_info

from dashboard.owner import pending_reasons
from dashboard.owner.decoder import DecodedEvents
from dashboard.owner.owner import CacheOwner
from dashboard.owner.pending_pods import PendingPods
from tests.decoded_feed import synced_items, watched
from tests.scheduling import why_pending as why
from tests.scheduling.why_pending import BY_NAME, CASES


class Clock:
    def __init__(self):
        self.now = 1_000.0

    def __call__(self):
        return self.now


@pytest.fixture
def owner():
    owner = CacheOwner(Cache(ttl=30), clock=Clock())
    pods = [why.pending(BY_NAME[name]) for name in ("cpu", "preempt-cannot", "memory",
                                                     "selector", "spread")]
    for item in synced_items([why.node(n) for n in CASES["nodes_before"]],
                             why.placed_pods() + pods):
        owner.apply(item)
    # a timer that never moves: a sweep of these five pods ends within one flush however
    # slow the machine (its budget is tested with a timer of its own below)
    owner.pending_reasons.timer = lambda: 0.0
    return owner


def scrape(owner) -> str:
    registry = CollectorRegistry()
    registry.register(owner.metrics)
    return generate_latest(registry).decode()


def test_each_pending_pod_counts_under_the_reason_most_nodes_give(owner):
    owner.flush()
    assert owner.status()["pending_reasons"] == {
        "Insufficient cpu": 2, "Insufficient memory": 1,
        "node(s) didn't match Pod's node affinity/selector": 1, pending_reasons.FITS: 1}
    text = scrape(owner)
    assert 'schedview_pending_pods{reason="Insufficient cpu"} 2.0' in text
    assert 'schedview_pending_pods{reason="fits a node now"} 1.0' in text


def test_the_status_publishes_the_top_reasons_with_a_pod_s_summary(owner):
    """The health banner and the overview name the reasons most pods wait for, each in
    kube-scheduler's words for one of its pods (its filter part of FailedScheduling)."""
    assert owner.status()["pending_top"] == []          # no sweep has ended yet
    owner.flush()
    top = owner.status()["pending_top"]
    assert [(t["reason"], t["pods"]) for t in top] == [
        ("Insufficient cpu", 2), ("Insufficient memory", 1), (pending_reasons.FITS, 1)]
    by_reason = {t["reason"]: t["summary"] for t in top}
    assert by_reason["Insufficient memory"] == (
        "0/7 nodes are available: 1 Too many pods, 1 node(s) were unschedulable, 2 node(s) "
        "had untolerated taint(s), 4 Insufficient memory.")
    assert by_reason[pending_reasons.FITS].startswith("2/7 nodes can take the pod now")


def test_equal_pods_share_one_diagnosis_and_the_count_waits_for_the_period(owner, monkeypatch):
    """Two pods alike but for their names: one diagnosis. A pod added mid-period is counted
    by the next sweep, PERIOD later."""
    twin = copy.deepcopy(owner.pending["uid-case-cpu"])    # as the feed digested it
    twin["metadata"].update(name="case-cpu-twin", uid="uid-twin")
    owner.pending.put(make_pod_info(twin), None)
    made = []
    diagnose = owner.diagnoser.diagnose
    monkeypatch.setattr(owner.diagnoser, "diagnose", lambda pod: made.append(pod) or diagnose(pod))
    owner.flush()
    assert owner.status()["pending_reasons"]["Insufficient cpu"] == 3
    assert len(made) == 5            # six pods, the twins diagnosed once
    owner.pending.pop("uid-twin")
    owner.clock.now += pending_reasons.PERIOD - 1
    owner.flush()
    assert owner.status()["pending_reasons"]["Insufficient cpu"] == 3
    owner.clock.now += 1
    owner.flush()
    assert owner.status()["pending_reasons"]["Insufficient cpu"] == 2


def test_a_pod_that_leaves_the_pending_pods_leaves_the_counts_at_once(owner):
    """Not a sweep later: the health banner links to the top reason's pods, and a reason
    whose pods are all gone led it to an empty list (the browser suite, a GPU job deleted)."""
    owner.flush()
    for name in ("memory", "cpu"):
        owner.apply(watched("pods", "DELETED", why.pending(BY_NAME[name])))
    status = owner.status()
    assert status["pending_reasons"] == {
        "Insufficient cpu": 1, "node(s) didn't match Pod's node affinity/selector": 1,
        pending_reasons.FITS: 1}
    assert "Insufficient memory" not in {t["reason"] for t in status["pending_top"]}


def _slow_sweep(pods=10, seconds=0.2):
    """A sweep whose every diagnosis takes `seconds` of its timer (one at 20,000 nodes)."""
    clock = {"t": 0.0}
    pending = PendingPods()
    for i in range(pods):
        pod = why.pending(BY_NAME["cpu"])
        pod["metadata"].update(uid=f"uid-{i}", name=f"cpu-{i}", labels={"i": str(i)})
        pending.put(make_pod_info(pod), None)

    def diagnose(pod):
        clock["t"] += seconds
        return Refused()
    sweep = pending_reasons.PendingReasons(None, Cache(ttl=0), pending,
                                           timer=lambda: clock["t"])
    sweep.diagnoser = type("Timed", (), {"diagnose": staticmethod(diagnose)})()
    return sweep


def test_a_sweep_over_budget_goes_on_at_the_next_flush():
    """A timer that says each pod took the whole budget: one pod per flush, and the counts
    of the last complete sweep meanwhile (none before the first)."""
    sweep = _slow_sweep(pods=3, seconds=pending_reasons.BUDGET)
    for _ in range(2):
        sweep.step(0.0)
        assert sweep.counts == {}
    sweep.step(0.0)
    assert sweep.counts == {"Insufficient cpu": 3}
    assert sweep.top(1) == [{"reason": "Insufficient cpu", "pods": 3,
                             "summary": "0/4 nodes are available: 4 Insufficient cpu."}]


# (steps as (now, kube-scheduler calling)), pods diagnosed after them: while calling, a
# step that spent 0.2 s waits 0.8 s (the sweep's share 0.2); without calls, every flush
PACING = [
    ("calls: one step, then none within 0.8 s", [(0.0, True), (0.5, True), (0.79, True)], 1),
    ("calls: the next step after 0.8 s", [(0.0, True), (0.8, True), (1.6, True)], 3),
    ("no calls: a step each flush", [(0.0, False), (0.1, False), (0.2, False)], 3),
    ("calls end: the next flush steps", [(0.0, True), (0.1, False)], 2),
]


@pytest.mark.parametrize("steps,diagnosed", [c[1:] for c in PACING], ids=[c[0] for c in PACING])
def test_while_kube_scheduler_calls_the_sweep_takes_a_fifth_of_the_owner_s_thread(steps,
                                                                                  diagnosed):
    """Issue 26: at 20,000 nodes a diagnosis took a tenth of a second or more and a step
    makes one at least, each flush: every filter and bind queued behind it waited."""
    sweep = _slow_sweep()
    for now, calling in steps:
        sweep.step(now, calling=calling)
    assert len(sweep._found) == diagnosed


class Refused:
    fits = False

    @staticmethod
    def filter_message():
        return "0/4 nodes are available: 4 Insufficient cpu."

    @staticmethod
    def reasons():
        return [{"reason": "Insufficient cpu", "count": 4, "nodes": []}]


def test_the_status_counts_pending_pod_changes_and_sweeps_for_the_live_pages(owner):
    """No cache event says a pending pod came, changed or left, nor that a sweep recounted
    the reasons: the status's counters do, and the Pending page's socket nudges on them."""
    before = owner.status()
    assert before["pending_sweeps"] == 0
    owner.flush()                                            # the first sweep ends
    assert owner.status()["pending_sweeps"] == 1
    pod = why.pending(BY_NAME["host-port"])
    pod["metadata"]["resourceVersion"] = "2"
    owner.apply(watched("pods", "ADDED", pod))
    came = owner.status()["pending_changes"]
    assert came == before["pending_changes"] + 1
    owner.apply(watched("pods", "DELETED", pod))
    assert owner.status()["pending_changes"] == came + 1
    owner.flush()                                            # within the period: no sweep
    assert owner.status()["pending_sweeps"] == 1


def test_the_sweep_waits_while_the_feed_is_behind(owner):
    """Issue 26: at 1,000 events a second the sweep took more of the owner's thread than
    applying the feed, which never caught up."""
    late = watched("pods", "ADDED", why.pending(BY_NAME["host-port"]))
    owner.feed.put(DecodedEvents(late.kind, late.events,
                                 received=owner.clock.now - 2 * pending_reasons.BEHIND))
    owner.flush()                                     # queued for 2 s: the sweep waits
    assert owner.status()["pending_sweeps"] == 0
    owner.drain_feed()
    owner.flush()                                     # applied after 2 s: it still waits
    assert owner.status()["pending_sweeps"] == 0
    owner.flush()                                     # caught up
    assert owner.status()["pending_sweeps"] == 1
