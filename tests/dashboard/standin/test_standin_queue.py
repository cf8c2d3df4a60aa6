"""kube-scheduler's queue as the stand-in keeps it: which pending pods are due, and when a
pod that failed comes back (../shared/k8s-wire/extender/README.md, "Retry timing")."""
from datetime import datetime, timezone

from dashboard.standin.standin_queue import SchedulingQueue, backoff
from dashboard.standin.standin_view import pending_pod


def pod(name, priority=0, created="2026-11-24T14:00:00Z", version="1"):
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}",
                         "creationTimestamp": created, "resourceVersion": version},
            "spec": {"priority": priority}}


def due(queue, pods, changes, now):
    """The names of the due pods, given whole and queued as the view keeps them."""
    return [p.thaw()["metadata"]["name"]
            for p in queue.due([pending_pod(p) for p in pods], changes, now)]


def test_highest_priority_first_then_oldest():
    pods = [pod("old-low", 0, "2026-11-24T14:00:00Z"),
            pod("new-high", 10, "2026-11-24T14:00:09Z"),
            pod("old-high", 10, "2026-11-24T14:00:01Z")]
    assert due(SchedulingQueue(), pods, 0, 0.0) == ["old-high", "new-high", "old-low"]


def test_errors_back_off_one_two_four_eight_then_ten_seconds():
    """05a: retried 1, 2, 4, 8 s after each failure; 10 s is the cap."""
    assert [backoff(n) for n in range(1, 7)] == [1, 2, 4, 8, 10, 10]
    queue, failing, other = SchedulingQueue(), pod("failing"), pod("other")
    now = 0.0
    for wait in (1, 2, 4, 8, 10):
        assert queue.failed(failing, now) == wait
        assert due(queue, [failing, other], 0, now + wait - 0.01) == ["other"]
        assert due(queue, [failing, other], 0, now + wait) == ["failing", "other"]
        now += wait


def test_an_unschedulable_pod_waits_for_a_cluster_change_or_the_flush():
    """04b: a pod deletion elsewhere brings the next attempt; 07: the 5-minute flush."""
    queue, waiting = SchedulingQueue(), pod("waiting")
    queue.unschedulable(waiting, 0.0, changes=5)
    assert due(queue, [waiting], 5, 60.0) == []
    assert due(queue, [waiting], 6, 60.0) == ["waiting"]
    assert due(queue, [waiting], 5, 300.0) == ["waiting"]
    # Its own update (a status write) does not wake a pod its own filters refused...
    assert due(queue, [pod("waiting", version="2")], 5, 60.0) == []


def test_a_pod_the_extender_rejected_wakes_on_its_own_update_too():
    """02 rej-2: kube-scheduler's own status write brought exactly one more attempt."""
    queue, rejected = SchedulingQueue(), pod("rejected")
    queue.unschedulable(rejected, 0.0, changes=5, by_extender=True)
    assert due(queue, [rejected], 5, 60.0) == []
    assert due(queue, [pod("rejected", version="2")], 5, 60.0) == ["rejected"]


def test_a_woken_pod_serves_no_backoff_and_a_bound_one_is_forgotten():
    """02 rej-2: the second attempt 5 ms after the first; an error's backoff still counts
    every attempt."""
    queue, waiting = SchedulingQueue(), pod("waiting")
    queue.failed(waiting, 0.0)
    queue.unschedulable(waiting, 1.0, changes=0)
    assert due(queue, [waiting], 1, 1.001) == ["waiting"]
    assert queue.failed(waiting, 2.0) == 4              # third attempt
    queue.bound(waiting)
    assert queue.failed(waiting, 10.0) == 1             # counting from the start again
    assert due(queue, [], 0, 10.0) == []                 # no longer pending: forgotten
    assert queue.failed(waiting, 20.0) == 1


def test_a_woken_pod_serves_its_backoff_while_other_pods_are_due():
    """kube-scheduler pops its backoff queue only when nothing else is active: under churn
    every deletion wakes the unschedulable pods, and the oldest of them took every attempt
    before (issue 26). An error's backoff is served even when nothing else is due."""
    queue, old, new = SchedulingQueue(), pod("old", created="2026-11-24T13:00:00Z"), pod("new")
    queue.unschedulable(old, 0.0, changes=0)                # first attempt: backoff 1 s
    assert due(queue, [old, new], 1, 0.5) == ["new"]         # woken, but another is due
    assert due(queue, [old], 1, 0.5) == ["old"]              # nothing else: at once (02)
    assert due(queue, [old, new], 1, 1.0) == ["old", "new"]  # its backoff served
    queue.failed(new, 1.0)                                   # an error: never early
    assert due(queue, [new], 1, 1.5) == []


def test_the_first_few_due_pods_come_in_order_without_sorting_them_all():
    pods = [pod(f"p{i:03}", priority=i % 3, created=f"2026-11-24T14:{i // 60:02}:{i % 60:02}Z")
            for i in range(300)]
    everything = due(SchedulingQueue(), pods, 0, 0.0)
    first = [p.thaw()["metadata"]["name"]
             for p in SchedulingQueue().due([pending_pod(p) for p in pods], 0, 0.0, limit=20)]
    assert first == everything[:20]
    assert everything[0] == "p002" and len(everything) == 300


def test_a_pod_that_failed_queues_behind_those_created_before_its_failure():
    """kube-scheduler refreshes a pod's queue timestamp when it comes back from an attempt:
    the oldest unschedulable pods do not take the first places at every wake-up."""
    at = datetime(2026, 11, 24, 14, 0, 30, tzinfo=timezone.utc).timestamp()
    queue = SchedulingQueue()
    old = pod("old", created="2026-11-24T14:00:00Z")
    new = pod("new", created="2026-11-24T14:00:10Z")
    later = pod("later", created="2026-11-24T14:00:40Z")
    urgent = pod("urgent", priority=10, created="2026-11-24T14:00:50Z")
    queue.unschedulable(old, at, changes=0)                  # failed at 14:00:30
    assert due(queue, [old, new, later, urgent], 1, at + 60) == ["urgent", "new", "old", "later"]
