"""The owner's cache dump (dashboard/owner/cache_dump.py, the `dump_cache` command), as
upstream's debugger writes it on SIGUSR2: a real owner fed as the decoder would, read a
page at a time. No Redis or database: nothing is flushed."""
import logging
import os
import signal

import pytest

from schedcache import Cache
from simcluster.generate import make_node, make_pod

from dashboard.owner.cache_dump import DumpSignal, summary
from dashboard.owner.handlers import CommandHandlers
from dashboard.owner.owner import CacheOwner
from dashboard.owner.pending_pods import PendingPod
from dashboard.wire.cache_dump import MAX_LIMIT
from dashboard.wire.commands import CommandError
from tests.decoded_feed import comparison, synced_items
from tests.waiting import wait_for

NODES = [f"node-{i}" for i in range(5)]


def cluster():
    nodes = [make_node(name) for name in NODES]
    pods = [make_pod(f"run-{i}", uid=f"uid-run-{i}", node_name=NODES[i % 2],
                     requests={"cpu": "500m", "memory": "1Gi"}) for i in range(3)]
    pods += [make_pod(f"wait-{i}", uid=f"uid-wait-{i}", priority=i,
                      requests={"cpu": "1", "memory": "1Gi"}) for i in range(4)]
    pods[-1]["status"]["nominatedNodeName"] = "node-1"   # after a preemption (03a)
    return nodes, pods


@pytest.fixture
def owner():
    owner = CacheOwner(Cache(ttl=30))
    for item in synced_items(*cluster()):
        owner.apply(item)
    return owner


def dump(owner, **args):
    return CommandHandlers(owner).dump_cache(args, "alice")


def every_page(owner, part, limit):
    pages, after = [], ""
    while after is not None:
        pages.append(dump(owner, part=part, after=after, limit=limit))
        after = pages[-1]["next"]
    return pages


def test_the_nodes_come_a_page_at_a_time_with_their_pods_and_nominated_pods(owner):
    pages = every_page(owner, "nodes", 2)
    assert [[n["name"] for n in page["items"]] for page in pages] == \
        [NODES[:2], NODES[2:4], NODES[4:]]
    node_0, node_1 = pages[0]["items"]
    assert sorted(p["name"] for p in node_0["pods"]) == ["run-0", "run-2"]
    assert node_0["requested"]["milli_cpu"] == 1000 and node_0["requested"]["memory"] == 2 * 2**30
    assert node_0["allocatable"]["milli_cpu"] > 30_000 and not node_0["deleted"]
    assert node_0["pods"][0] == {"uid": node_0["pods"][0]["uid"], "namespace": "default",
                                 "name": node_0["pods"][0]["name"], "phase": "Running",
                                 "assumed": False}
    assert node_0["nominated_pods"] == []
    assert node_1["nominated_pods"] == [{"uid": "uid-wait-3", "namespace": "default",
                                         "name": "wait-3", "priority": 3,
                                         "nominated_node": "node-1"}]
    header = pages[0]
    assert header["seq"] == owner.seq_base + owner.cache.event_seq
    assert header["generation"] == owner.cache.generation
    assert header["counts"] == {"nodes": 5, "pods": 3, "assumed": 0, "pending": 4}
    assert header["comparer"] is None


def test_the_pending_pods_come_a_page_at_a_time_by_uid(owner):
    pages = every_page(owner, "pending", 3)
    assert [[p["uid"] for p in page["items"]] for page in pages] == \
        [["uid-wait-0", "uid-wait-1", "uid-wait-2"], ["uid-wait-3"]]
    assert pages[0]["items"][1] == {"uid": "uid-wait-1", "namespace": "default",
                                    "name": "wait-1", "priority": 1, "nominated_node": ""}


def test_the_dump_reads_no_pending_pod_whole(owner, monkeypatch):
    """Every page of nodes looks through every pending pod for those nominated there: with a
    thaw each, a dump at 66,000 pending pods held the owner's loop for minutes."""
    expected = [every_page(owner, part, 2) for part in ("nodes", "pending")]
    monkeypatch.setattr(PendingPod, "pod", property(lambda entry: pytest.fail("thawed")))
    assert [every_page(owner, part, 2) for part in ("nodes", "pending")] == expected
    assert "4 pending (1 nominated)" in summary(owner)


def test_a_page_that_ends_the_dump_says_so_even_when_full(owner):
    page = dump(owner, part="nodes", after="", limit=len(NODES))
    assert len(page["items"]) == len(NODES) and page["next"] is None
    assert dump(owner, part="nodes", after="node-4", limit=1)["items"] == []


def test_an_assumed_pod_and_a_deleted_node_with_pods_left_show(owner):
    pending = owner.pending["uid-wait-0"]
    owner.changes.assume(dict(pending, spec=dict(pending["spec"], nodeName="node-3")),
                         "operator", "alice")
    owner.cache.remove_node(make_node("node-0"))
    nodes = {n["name"]: n for n in dump(owner, limit=MAX_LIMIT)["items"]}
    assert [p["assumed"] for p in nodes["node-3"]["pods"]] == [True]
    assert nodes["node-0"]["deleted"] and len(nodes["node-0"]["pods"]) == 2


def test_the_comparers_latest_verdict_is_in_every_page(owner):
    nodes, pods = cluster()
    owner.apply(comparison(nodes[1:], pods, "1"))     # node-0 gone from the cluster
    wait_for(lambda: owner.drain_feed() and owner.latest_report, 10, "the comparison")
    verdict = dump(owner, part="pending", limit=1)["comparer"]
    assert verdict["clean"] is False
    assert verdict["found"]["redundant_nodes"] == 1 and verdict["found"]["missed_pods"] == 0
    assert "comparer: drift: 1 redundant_nodes" in summary(owner)


@pytest.mark.parametrize("args, words", [
    ({"part": "pods"}, "part must be one of nodes, pending"),
    ({"after": 7}, "after must be a string"),
    ({"limit": 0}, f"limit must be a whole number from 1 to {MAX_LIMIT}"),
    ({"limit": MAX_LIMIT + 1}, "limit must be a whole number"),
    ({"limit": "10"}, "limit must be a whole number"),
    ({"limit": True}, "limit must be a whole number"),
])
def test_a_malformed_ask_is_refused(owner, args, words):
    with pytest.raises(CommandError) as refused:
        dump(owner, **args)
    assert refused.value.status == 400 and words in refused.value.message


def test_sigusr2_only_raises_a_flag_and_the_loop_logs_the_summary(owner, caplog):
    previous = signal.getsignal(signal.SIGUSR2)
    try:
        flag = DumpSignal().install()
        assert not flag.take()
        os.kill(os.getpid(), signal.SIGUSR2)
        wait_for(lambda: flag.raised, 5, "the signal")
        with caplog.at_level(logging.INFO, logger="dashboard.owner.cache_dump"):
            flag.serve(owner)
            flag.serve(owner)           # taken: logged once
    finally:
        signal.signal(signal.SIGUSR2, previous)
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [f"cache dump at seq {owner.seq_base + owner.cache.event_seq}, generation "
                     f"{owner.cache.generation}: 5 nodes, 3 pods (0 assumed), 4 pending "
                     f"(1 nominated); comparer: not compared yet; the whole dump: "
                     f"manage.py dumpcache"]
