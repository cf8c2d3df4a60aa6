"""The `pending_pods` command (dashboard/owner/pending_queue.py): kube-scheduler's queue
order (PrioritySort: priority desc, then the earliest), positions in the whole queue,
first reasons from the last sweep, counts and filters, and bad arguments refused."""
import pytest

from schedcache import Cache
from simcluster.generate import make_node

from dashboard.owner import pending_reasons
from dashboard.owner.commands import CommandError
from dashboard.owner.handlers import CommandHandlers
from dashboard.owner.owner import CacheOwner
from dashboard.owner.pending_queue import UNSWEPT
from tests.dashboard.owner.queuepods import CPU, SELECTOR, pod, queue_pods
from tests.decoded_feed import synced_items, watched


@pytest.fixture
def owner():
    owner = CacheOwner(Cache(ttl=30), clock=lambda: 1_000.0)
    for item in synced_items([make_node("n1", cpu="32")], queue_pods()):
        owner.apply(item)
    owner.flush()       # the first sweep: every pod gets its first reason
    return owner


def ask(owner, **args):
    return CommandHandlers(owner).handlers()["pending_pods"](args, "viewer")


def names(answer):
    return [(item["position"], item["name"], item["reason"]) for item in answer["items"]]


def test_the_queue_is_priority_first_then_the_oldest_each_with_its_reason(owner):
    answer = ask(owner)
    assert names(answer) == [(1, "big", CPU), (2, "b", pending_reasons.FITS),
                             (3, "a", pending_reasons.FITS), (4, "d", SELECTOR),
                             (5, "e", CPU)]
    assert answer["queued"] == answer["total"] == 5
    assert answer["items"][0]["created"] == "2026-11-01T00:00:05Z"
    assert answer["counts"] == {
        "reason": [[CPU, 2], [pending_reasons.FITS, 2], [SELECTOR, 1]],
        "namespace": [["team", 3], ["batch", 2]],
        "priority": [[100, 1], [10, 2], [0, 2]]}


def test_filters_keep_the_whole_queues_positions_and_count_under_the_other_filter(owner):
    answer = ask(owner, reason=CPU)
    assert names(answer) == [(1, "big", CPU), (5, "e", CPU)]
    assert answer["total"] == 2 and answer["queued"] == 5
    assert answer["counts"]["namespace"] == [["batch", 1], ["team", 1]]
    assert answer["counts"]["reason"][0] == [CPU, 2]      # every reason, for the choice
    answer = ask(owner, namespace="team", reason=CPU)
    assert names(answer) == [(5, "e", CPU)]
    assert answer["counts"]["reason"] == [[pending_reasons.FITS, 2], [CPU, 1]]


def test_a_page_is_a_slice_of_the_queue(owner):
    assert names(ask(owner, offset=2, limit=2)) == [(3, "a", pending_reasons.FITS),
                                                    (4, "d", SELECTOR)]
    assert ask(owner, offset=10)["items"] == []


def test_an_assumed_pod_has_left_the_queue_and_a_new_one_waits_for_the_sweep(owner):
    owner.changes.assume(dict(owner.pending["uid-b"],
                              spec=dict(owner.pending["uid-b"]["spec"], nodeName="n1")),
                         "operator", "test")
    owner.apply(watched("pods", "ADDED", pod("late", "team", 1000, 9)))
    answer = ask(owner)
    assert names(answer)[:2] == [(1, "late", UNSWEPT), (2, "big", CPU)]
    assert "b" not in [item["name"] for item in answer["items"]]


@pytest.mark.parametrize("args, words", [
    ({"limit": 501}, "limit must be a whole number from 0 to 500"),
    ({"offset": -1}, "offset must be a whole number"),
    ({"offset": "2"}, "offset must be a whole number"),
    ({"reason": 3}, "reason must be text"),
    ({"namespace": "x" * 254}, "namespace must be text of at most 253"),
])
def test_bad_arguments_are_refused(owner, args, words):
    with pytest.raises(CommandError) as refused:
        ask(owner, **args)
    assert refused.value.status == 400 and words in refused.value.message
