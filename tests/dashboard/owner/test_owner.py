"""The cache owner, driven item by item: what the watch and the lists feed it, what
commands it takes, and the rows and history it writes (through the real writer thread,
into the real database)."""
import threading

import pytest

from simcluster.generate import make_node

import dashboard.owner.comparing as comparing_module
from dashboard.owner import drift_repair
from dashboard.models import ComparerRun, NodeRecord, PodRecord, Transition
from dashboard.wire.commands import CommandError
from tests.dashboard.owner.owned import (
    command,
    feed,
    flushed,
    new_owner,
    nodes,
    pod,
    synced,
    uid,
)
from tests.decoded_feed import comparison, fetched, synced_items, watched

pytestmark = pytest.mark.django_db(transaction=True)


def test_listed_pods_land_in_the_cache_and_the_read_model(owner, writer):
    bound, waiting = pod("a", "n1"), pod("b")
    synced(owner, nodes("n1", "n2"), [bound, waiting])
    assert owner.cache.pod_state({"metadata": {"uid": uid(bound)}}) == "Added"
    assert owner.cache.pod_count() == 1
    flushed(owner, writer)
    rows = {r.name: r for r in PodRecord.objects.all()}
    assert rows["a"].state == "Added" and rows["a"].node == "n1" and rows["a"].zone
    assert rows["b"].state == "Pending" and rows["b"].node == ""
    assert {n.name for n in NodeRecord.objects.all()} == {"n1", "n2"}
    assert NodeRecord.objects.get(name="n1").pods == 1
    assert Transition.objects.filter(kind="pod_added", key=uid(bound)).get().seq > 100


def test_watch_events_update_skip_and_remove(owner, writer):
    p = pod("a", "n1")
    synced(owner, nodes("n1"), [p])
    newer = dict(p, metadata=dict(p["metadata"], resourceVersion="99", labels={"v": "2"}))
    feed(owner, watched("pods", "MODIFIED", newer))
    assert owner.cache.pod_info(uid(p)).resource_version == "99"
    seq = owner.cache.event_seq
    feed(owner, watched("pods", "MODIFIED", newer))   # same version: nothing to do
    assert owner.cache.event_seq == seq
    done = dict(newer, status=dict(newer["status"], phase="Succeeded"))
    feed(owner, watched("pods", "MODIFIED", done))
    assert owner.cache.pod_count() == 0
    flushed(owner, writer)
    assert not PodRecord.objects.filter(uid=uid(p)).exists()


def test_objects_without_uid_are_skipped(owner):
    broken = pod("x", "n1")
    del broken["metadata"]["uid"]
    feed(owner, watched("pods", "ADDED", broken))
    assert owner.stats["skipped"] == 1 and owner.cache.pod_count() == 0


def test_a_relist_removes_what_the_cluster_lost_meanwhile(owner, writer):
    a, b, gone = pod("a", "n1"), pod("b", "n2"), pod("gone", "n1")
    synced(owner, nodes("n1", "n2"), [a, b, gone])
    feed(owner, *synced_items(nodes("n1"), [a], "20"))
    assert owner.cache.pod_keys() == [uid(a)]
    assert owner.cache.node_names() == ["n1"]
    # node n2 was deleted with pod b gone too: no ghost left behind
    assert owner.cache.node_count() == 1


def test_assume_then_confirm_by_the_watch(owner, writer):
    waiting = pod("w")
    synced(owner, nodes("n1"), [waiting])
    result = command(owner, "assume", {"namespace": "team", "name": "w", "node": "n1"}, "alice")
    assert result["uid"] == uid(waiting) and result["node"] == "n1"
    assert result["after"]["pods"] == result["before"]["pods"] + 1
    assert owner.cache.is_assumed_pod({"metadata": {"uid": uid(waiting)}})
    flushed(owner, writer)
    assert PodRecord.objects.get(uid=uid(waiting)).state == "Assumed"
    t = Transition.objects.get(kind="pod_assumed")
    assert (t.cause, t.actor) == ("operator", "alice")
    bound = dict(waiting, spec=dict(waiting["spec"], nodeName="n1"),
                 metadata=dict(waiting["metadata"], resourceVersion="50"))
    feed(owner, watched("pods", "MODIFIED", bound))
    assert owner.cache.pod_state({"metadata": {"uid": uid(waiting)}}) == "Added"
    flushed(owner, writer)
    assert PodRecord.objects.get(uid=uid(waiting)).state == "Added"
    assert Transition.objects.get(kind="pod_confirmed").cause == "watch"


@pytest.mark.parametrize("args,status", [
    ({"namespace": "team", "name": "nobody", "node": "n1"}, 404),
    ({"namespace": "team", "node": "n1"}, 400),
    ({"uid": "no-such-uid", "node": "n1"}, 404),
    ({"namespace": "team", "name": "w", "node": "no-such-node"}, 404),
    ({"namespace": "team", "name": "w"}, 400),
])
def test_assume_refusals_change_nothing(owner, args, status):
    synced(owner, nodes("n1"), [pod("w")])
    seq = owner.cache.event_seq
    with pytest.raises(CommandError) as refused:
        command(owner, "assume", args, "alice")
    assert refused.value.status == status
    assert owner.cache.event_seq == seq


def test_an_assume_names_the_lease_term_its_bind_must_carry(owner):
    owner.term = 3
    synced(owner, nodes("n1"), [pod("w")])
    assert command(owner, "assume", {"namespace": "team", "name": "w", "node": "n1"},
                   "alice")["term"] == 3


def test_assume_twice_is_a_conflict(owner):
    synced(owner, nodes("n1"), [pod("w")])
    command(owner, "assume", {"namespace": "team", "name": "w", "node": "n1"}, "alice")
    with pytest.raises(CommandError) as refused:
        command(owner, "assume", {"namespace": "team", "name": "w", "node": "n1"}, "alice")
    assert refused.value.status == 409


def test_forget_expire_and_reap(owner, writer):
    a, b, c = pod("a"), pod("b"), pod("c")
    synced(owner, nodes("n1"), [a, b, c])
    for p in (a, b, c):
        command(owner, "assume", {"uid": uid(p), "node": "n1"}, "tool")
    assert command(owner, "forget", {"uid": uid(a), "strict": True}, "bob")["changed"]
    assert command(owner, "expire", {"uid": uid(b)}, "bob")["after"]["pods"] == 1
    command(owner, "finish_binding", {"uid": uid(c), "now": 1000.0}, "bind")
    assert command(owner, "reap", {"now": 1020.0}, "reaper")["expired"] == []
    assert command(owner, "reap", {"now": 1031.0}, "reaper")["expired"] == [uid(c)]
    flushed(owner, writer)
    states = {r.name: r.state for r in PodRecord.objects.all()}
    assert states == {"a": "Forgotten", "b": "Expired", "c": "Expired"}
    assert Transition.objects.get(kind="pod_expired", key=uid(c)).cause == "reaper"


def test_forget_of_an_added_pod_is_refused_and_a_missing_one_is_a_no_op(owner):
    added = pod("a", "n1")
    synced(owner, nodes("n1"), [added])
    with pytest.raises(CommandError) as refused:
        command(owner, "forget", {"uid": uid(added)}, "bob")
    assert refused.value.status == 409
    assert command(owner, "forget", {"uid": "gone"}, "bind") == {"uid": "gone", "changed": False}
    with pytest.raises(CommandError):
        command(owner, "forget", {"uid": "gone", "strict": True}, "bob")


def test_sequence_numbers_continue_from_the_base_and_stale_rows_are_pruned(owner, writer):
    PodRecord.objects.create(uid="left-over", namespace="x", name="y", state="Added",
                             owner_epoch=1)
    synced(owner, nodes("n1"), [pod("a", "n1")])
    flushed(owner, writer)
    assert not PodRecord.objects.filter(uid="left-over").exists()
    seqs = list(Transition.objects.values_list("seq", flat=True))
    assert seqs == list(range(101, 101 + len(seqs)))


def test_a_comparison_is_recorded(owner, writer):
    a = pod("a", "n1")
    synced(owner, nodes("n1"), [a])
    feed(owner, comparison(nodes("n1"), [a, pod("missed", "n1")], "30"))
    flushed(owner, writer)
    run = ComparerRun.objects.get()
    assert not run.clean
    assert run.report["missed_pods"] == [uid(pod("missed", "n1"))]


def healed(owner):
    """The heal calls a comparison makes, as (kind, keys or None) pairs."""
    calls = []
    owner.comparer.heal = lambda kind, keys: calls.append((kind, keys))
    return calls


def test_drift_found_by_a_comparison_fetches_the_drifted_objects_again(owner):
    # Issue 26: each drift relisted every pod, which held the feed for minutes at 600,000.
    calls = healed(owner)
    a, stale, gone, waiting, ghost = (pod("a", "n1"), pod("stale", "n1"), pod("gone", "n1"),
                                      pod("waiting"), pod("ghost"))
    synced(owner, nodes("n1", "n2"), [a, stale, gone, waiting, ghost])
    feed(owner, comparison(nodes("n1", "n2"), [a, stale, gone, waiting, ghost], "30"))
    assert calls == [] and owner.latest_report.clean
    # The lists at 31: stale changed, gone and ghost (pending) were deleted, missed bound
    # and new created without a node, n2 deleted: each by an event the watch lost.
    missed, new = pod("missed", "n1"), pod("new")
    lists = [a, versioned(stale, "25"), waiting, missed, new]
    feed(owner, comparison(nodes("n1"), lists, "31"))
    assert sorted(calls[0][1]) == sorted(
        ("team", p["metadata"]["name"], uid(p)) for p in (stale, gone, ghost, missed, new))
    assert calls[1:] == [("nodes", ["n2"])]
    run = owner.comparer.journal.batch.comparer_runs[-1]
    assert not run["clean"]
    assert (run["report"]["pending_missed"], run["report"]["pending_redundant"]) == (
        [uid(new)], [uid(ghost)])


def test_drift_past_the_repair_share_relists_the_kind(owner, monkeypatch):
    monkeypatch.setattr(drift_repair, "REPAIR_MIN", 1)
    calls = healed(owner)
    a = pod("a", "n1")
    synced(owner, nodes("n1"), [a])
    feed(owner, comparison(nodes("n1"), [a, pod("m1", "n1")], "30"))
    assert calls == [("pods", [("team", "m1", uid(pod("m1", "n1")))])]
    feed(owner, comparison(nodes("n1"), [a, pod("m1", "n1"), pod("m2", "n1")], "31"))
    assert calls[1:] == [("pods", None)]


def test_a_repair_lands_only_over_an_older_version_and_a_deletion_is_final(owner, writer):
    a, gone, ghost = pod("a", "n1"), pod("gone", "n1"), pod("ghost")
    synced(owner, nodes("n1"), [a, gone, ghost])
    key = ("team", "a", uid(a))
    feed(owner, fetched("pods", key, versioned(a, "40")))
    assert owner.cache.pod_info(uid(a)).resource_version == "40"
    # the watch got there first: a repair fetched before it does not undo it
    feed(owner, fetched("pods", key, versioned(a, "35")))
    assert owner.cache.pod_info(uid(a)).resource_version == "40"
    feed(owner, fetched("pods", ("team", "gone", uid(gone)), None),
         fetched("pods", ("team", "ghost", uid(ghost)), None))
    assert owner.cache.pod_info(uid(gone)) is None and uid(ghost) not in owner.pending
    # a pod of the same name, another uid: ours is gone, theirs is what the cluster has
    again = pod("a", "n1", uid="another-uid")
    feed(owner, fetched("pods", key, again))
    assert owner.cache.pod_info(uid(a)) is None
    assert owner.cache.pod_info("another-uid") is not None
    flushed(owner, writer)
    assert set(Transition.objects.filter(cause="repair").values_list("kind", flat=True)) == {
        "pod_updated", "pod_removed", "pod_added"}


def test_a_repair_of_a_node(owner):
    n1, n2 = nodes("n1", "n2")
    synced(owner, [n1, n2], [])
    feed(owner, fetched("nodes", "n1", versioned(dict(n1, metadata=dict(
        n1["metadata"], labels={"fixed": "yes"})), "50")), fetched("nodes", "n2", None))
    assert owner.cache.node_info("n1").node["metadata"]["labels"] == {"fixed": "yes"}
    assert not owner.applier.has_node("n2")


def test_changes_after_the_lists_were_taken_are_not_drift(owner, writer):
    a, b = pod("a", "n1"), pod("b", "n1")
    synced(owner, nodes("n1"), [a, b])
    listed_a = dict(a, metadata=dict(a["metadata"], resourceVersion="20"))
    # After the lists (version 30): a changed (41), b was deleted (42), c was created (43).
    feed(owner, watched("pods", "MODIFIED", dict(a, metadata=dict(a["metadata"], resourceVersion="41"))),
         watched("pods", "DELETED", dict(b, metadata=dict(b["metadata"], resourceVersion="42"))),
         watched("pods", "ADDED", pod("c", "n1", resource_version="43")))
    feed(owner, comparison(nodes("n1"), [listed_a, b], "30"))
    assert owner.latest_report.clean, owner.latest_report.as_dict()
    # The same cache against lists taken after those changes would show real drift.
    feed(owner, comparison(nodes("n1"), [listed_a], "50"))
    assert not owner.latest_report.clean


def versioned(p, version):
    return dict(p, metadata=dict(p["metadata"], resourceVersion=version))


def test_changes_before_the_lists_the_cache_got_after_its_dump_are_not_drift(owner):
    # Issue 26: under load the watch ran seconds behind the lists, and every pod changed in
    # those seconds read as drift, a relist of every pod at each comparison.
    a, b, lost, moved = pod("a", "n1"), pod("b", "n1"), pod("lost", "n1"), pod("moved", "n1")
    c, missed = pod("c", "n1", resource_version="27"), pod("missed", "n1", resource_version="26")
    synced(owner, nodes("n1", "n2"), [a, b, lost, moved])
    dumped, release = threading.Event(), threading.Event()
    real = comparing_module.compare_dump

    def compare_then_wait(*args):
        report = real(*args)
        dumped.set()
        assert release.wait(10), "the test never released the comparison"
        return report
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(comparing_module, "compare_dump", compare_then_wait)
        # The lists (version 30): a changed (25), b deleted, c created (27), lost changed
        # (26) by an event the watch lost, moved put on n2 by one it lost too.
        lists = [versioned(a, "25"), c, versioned(lost, "26"), missed,
                 versioned(pod("moved", "n2"), "24")]
        owner.apply(comparison(nodes("n1", "n2"), lists, "30"))
        assert dumped.wait(10)
        # ...the watch hands over what it was behind on after the dump was compared
        feed(owner, watched("pods", "MODIFIED", versioned(a, "25")),
             watched("pods", "DELETED", versioned(b, "28")),
             watched("pods", "ADDED", c))
        release.set()
        owner.apply(owner.feed.get(timeout=10))
    report = owner.latest_report
    assert (report.stale_pods, report.redundant_pods, report.missed_pods) == (
        [(uid(lost), "1", "26")], [], [uid(missed)])
    assert report.wrong_node_pods == [(uid(moved), "n1", "n2")]


def test_a_comparison_runs_off_the_owners_thread(owner, monkeypatch):
    # the owner keeps applying the watch while a long comparison runs (issue 26: one on
    # the owner's thread held reap commands 6.6 s and lost the lease)
    started, release = threading.Event(), threading.Event()
    real = comparing_module.compare_dump

    def slow_compare(*args):
        started.set()
        assert release.wait(10), "the test never released the comparison"
        return real(*args)
    monkeypatch.setattr(comparing_module, "compare_dump", slow_compare)
    a = pod("a", "n1")
    synced(owner, nodes("n1"), [a])
    owner.apply(comparison(nodes("n1"), [a, pod("missed", "n1")], "30"))
    assert started.wait(10)
    owner.apply(watched("pods", "ADDED", pod("b", "n1", resource_version="40")))
    assert owner.cache.pod_info(uid(pod("b", "n1"))) is not None   # applied meanwhile
    owner.comparer.lister = lambda: pytest.fail("a second comparison started")
    assert owner.comparer.start()["started"] is False    # one at a time
    assert owner.latest_report is None and owner.feed.empty()
    release.set()
    owner.apply(owner.feed.get(timeout=10))
    assert owner.latest_report.missed_pods == [uid(pod("missed", "n1"))]


def test_a_large_backlog_of_rows_is_written_over_several_flushes(owner, writer, monkeypatch):
    import dashboard.owner.rows as rows_module
    monkeypatch.setattr(rows_module, "ROWS_PER_FLUSH", 2)
    PodRecord.objects.create(uid="left-over", namespace="x", name="y", state="Added",
                             owner_epoch=1)
    synced(owner, nodes("n1"), [pod(f"p{i}", "n1") for i in range(5)])
    flushed(owner, writer)
    assert PodRecord.objects.count() == 2 + 1        # two rows, and nothing pruned yet
    flushed(owner, writer)
    flushed(owner, writer)
    assert PodRecord.objects.count() == 5            # all rows written, then the prune
    assert not PodRecord.objects.filter(uid="left-over").exists()


def test_a_flush_is_published_only_once_its_rows_are_written(writer):
    """Pages re-render from the read model when they hear of a flush: by then the rows
    and the transitions it announces must be in the database."""
    seen = []

    class Recorder:
        def publish(self, events, status, term=None):
            seen.append((events, set(Transition.objects.values_list("seq", flat=True)),
                         set(PodRecord.objects.values_list("name", flat=True))))

    owner = new_owner(writer, publisher=Recorder())
    synced(owner, nodes("n1"), [pod("a", "n1")])
    flushed(owner, writer)
    events, written_seqs, written_pods = seen[-1]
    announced = {event["seq"] for event in events if event["kind"] != "snapshot_updated"}
    assert announced and announced <= written_seqs
    assert "a" in written_pods


def test_a_new_leader_is_the_first_event_of_its_history(owner, writer):
    """The handover shows in the events: numbered right after the previous owner's last
    (seq_base 100), ahead of the cache's own events, which move up one."""
    owner.note_leader("owner-b")
    synced(owner, nodes("n1"), [])
    flushed(owner, writer)
    rows = list(Transition.objects.order_by("seq").values("seq", "kind", "key", "cause", "actor"))
    assert rows[0] == {"seq": 101, "kind": "owner_leading", "key": "owner-b", "cause": "owner",
                       "actor": "owner-b"}
    assert rows[1]["seq"] == 102 and rows[1]["kind"] == "node_added"
    assert owner.status()["seq"] == rows[-1]["seq"]


def test_pending_forgotten_and_expired_pods_keep_their_requests(owner, writer):
    """The 64-GPU job shows what it asks for while it waits, and a pod that left the
    cache still says what it asked for."""
    job = pod("gpu-job", requests={"cpu": "1", "memory": "4Gi", "nvidia.com/gpu": "64"})
    small = pod("small", requests={"cpu": "250m", "memory": "256Mi"})
    synced(owner, nodes("n1"), [job, small])
    command(owner, "assume", {"uid": uid(small), "node": "n1"}, "tool")
    command(owner, "forget", {"uid": uid(small), "strict": True}, "bob")
    flushed(owner, writer)
    rows = {r.name: r for r in PodRecord.objects.all()}
    assert (rows["gpu-job"].state, rows["gpu-job"].milli_cpu, rows["gpu-job"].memory,
            rows["gpu-job"].scalar_resources) == ("Pending", 1000, 4 << 30,
                                                  {"nvidia.com/gpu": 64})
    assert (rows["small"].state, rows["small"].milli_cpu, rows["small"].memory) == (
        "Forgotten", 250, 256 << 20)


def test_node_rows_carry_labels_taints_conditions_and_utilisation(owner, writer):
    gpu_node = make_node("g1", gpus=8, taints=[{"key": "gpu", "value": "yes",
                                                 "effect": "NoSchedule"}], labels={"pool": "a"})
    busy = pod("busy", "g1", requests={"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "2"})
    synced(owner, [gpu_node, *nodes("n1")], [busy])
    flushed(owner, writer)
    g1, n1 = NodeRecord.objects.get(name="g1"), NodeRecord.objects.get(name="n1")
    assert g1.labels["pool"] == "a" and g1.taints == [
        {"key": "gpu", "value": "yes", "effect": "NoSchedule"}]
    assert {c["type"] for c in g1.conditions} >= {"Ready"} and not g1.unschedulable
    assert g1.cpu_percent == round(100 * 8000 / g1.allocatable["milli_cpu"], 1)
    assert g1.memory_percent == round(100 * (32 << 30) / g1.allocatable["memory"], 1)
    assert g1.gpu_percent == 25.0
    assert (n1.cpu_percent, n1.gpu_percent) == (0.0, None)    # no GPUs: no GPU use
