"""Nudges (live/nudge.py): paced to one every NUDGE_INTERVAL whatever the churn, a change
held back goes out with the first flush past the pace, and the pending pods' version in
the owner's status says when the queue moved. Time is passed in (`now`), never slept."""
import pytest

from dashboard.web.live.nudge import NUDGE_INTERVAL, Pace, PendingVersion
from dashboard.web.pending.consumers import PendingConsumer
from dashboard.web.pods.consumers import PodDetailConsumer


@pytest.mark.parametrize("offers, nudged", [
    ([(True, 0.0)], [True]),                                   # a lone change: at once
    ([(False, 0.0), (False, 5.0)], [False, False]),            # nothing moved: nothing said
    ([(True, 0.0), (True, 0.5), (False, 1.9), (False, NUDGE_INTERVAL)],
     [True, False, False, True]),                              # held back, then sent
    ([(True, 0.0), (False, NUDGE_INTERVAL)], [True, False]),   # nothing owed: nothing sent
])
def test_the_pace(offers, nudged):
    pace = Pace()
    assert [pace.offer(changed, now) for changed, now in offers] == nudged


def status(changes, sweeps=0):
    return {"status": {"pending_changes": changes, "pending_sweeps": sweeps}, "events": []}


@pytest.mark.parametrize("messages, moved", [
    ([status(3), status(3)], [False, False]),          # the first is the baseline
    ([status(3), status(4)], [False, True]),           # a pending pod came, changed or left
    ([status(3), status(3, sweeps=1)], [False, True]),  # a sweep recounted the reasons
    ([status(3), {"status": {}, "events": []}, status(3)], [False, False, False]),
    ([status(9), status(0)], [False, True]),           # another owner took over
])
def test_the_pending_version(messages, moved):
    version = PendingVersion()
    assert [version.moved(message) for message in messages] == moved


def churn(count, seconds):
    """`count` flushes spread over `seconds`, each moving a pending pod and a node."""
    return [(i * seconds / count,
             {"status": {"pending_changes": i + 1, "pending_sweeps": 0},
              "events": [{"seq": i + 1, "kind": "node_updated", "key": "n1", "node": "n1"}]})
            for i in range(count)]


@pytest.mark.parametrize("consumer_class", [PendingConsumer, PodDetailConsumer])
def test_a_burst_of_a_thousand_changes_yields_a_bounded_number_of_nudges(consumer_class):
    consumer = consumer_class()
    consumer.uid = "p1"     # a pod page's; the Pending page's has none
    now = [0.0]
    consumer.clock = lambda: now[0]
    nudges = 0
    for at, message in churn(1000, 10.0):
        now[0] = at
        nudges += consumer.wants(message)
    assert 5 <= nudges <= 10.0 / NUDGE_INTERVAL + 1
    # the burst's last change is not lost: the next (idle) flush past the pace says it
    now[0] = 10.0 + NUDGE_INTERVAL
    assert consumer.wants({"status": {"pending_changes": 1000, "pending_sweeps": 0},
                           "events": []})
