"""The comparer compares the read model's rows with the cache too (issue 22: a stale
owner's flush left rows of deleted pods that the comparer never saw): rows found wrong
are reported as drift and rewritten, and rows merely behind the cache are not drift."""
import threading

import pytest
from django.db import OperationalError

from dashboard.models import ComparerRun, NodeRecord, PodRecord
from dashboard.owner import row_drift
from tests.dashboard.owner.owned import feed, flushed, nodes, pod, synced, uid
from tests.decoded_feed import comparison, watched

pytestmark = pytest.mark.django_db(transaction=True)


def latest_report(writer, owner):
    flushed(owner, writer)
    return ComparerRun.objects.order_by("-id").first().report


def written(owner, writer, node_objs, pod_objs):
    """Synced, and every row written once (pruned): the rows are compared from then on."""
    synced(owner, node_objs, pod_objs)
    flushed(owner, writer)
    flushed(owner, writer)
    assert owner.rows.backlog() == 0




def test_rows_written_as_the_cache_holds_them_are_clean(owner, writer):
    a, b = pod("a", "n1"), pod("b")
    written(owner, writer, nodes("n1"), [a, b])
    feed(owner, comparison(nodes("n1"), [a, b], "30"))
    report = latest_report(writer, owner)
    assert report["rows_compared"] and report["clean"], report
    assert report["rows_missing"] == report["rows_extra"] == report["rows_stale"] == []


def test_a_row_of_a_deleted_pod_is_drift_and_is_deleted(owner, writer):
    a, gone = pod("a", "n1"), pod("gone", "n1")
    written(owner, writer, nodes("n1"), [a, gone])
    row = PodRecord.objects.get(uid=uid(gone))
    feed(owner, watched("pods", "DELETED", gone))
    flushed(owner, writer)
    assert not PodRecord.objects.filter(uid=uid(gone)).exists()
    # What a stale owner's late flush did (issue 22): the deleted pod's row upserted again.
    row.save()
    feed(owner, comparison(nodes("n1"), [a], "30"))
    report = latest_report(writer, owner)
    assert not report["clean"]
    assert report["rows_extra"] == [["pod", uid(gone), ["Added", "n1"], None]]
    assert not PodRecord.objects.filter(uid=uid(gone)).exists()      # healed by that flush
    feed(owner, comparison(nodes("n1"), [a], "31"))
    assert latest_report(writer, owner)["clean"]


def test_missing_and_stale_rows_are_drift_and_are_rewritten(owner, writer):
    a, b = pod("a", "n1"), pod("b", "n2")
    written(owner, writer, nodes("n1", "n2"), [a, b])
    PodRecord.objects.filter(uid=uid(a)).delete()
    PodRecord.objects.filter(uid=uid(b)).update(state="Pending", node="")
    NodeRecord.objects.filter(name="n2").delete()
    feed(owner, comparison(nodes("n1", "n2"), [a, b], "30"))
    report = latest_report(writer, owner)
    generation = owner.cache.node_info("n2").generation
    assert report["rows_missing"] == [["node", "n2", None, generation],
                                      ["pod", uid(a), None, ["Added", "n1"]]]
    assert report["rows_stale"] == [["pod", uid(b), ["Pending", ""], ["Added", "n2"]]]
    assert PodRecord.objects.get(uid=uid(a)).state == "Added"
    assert PodRecord.objects.get(uid=uid(b)).node == "n2"
    assert NodeRecord.objects.filter(name="n2").exists()


def test_rows_behind_the_cache_by_a_flush_are_not_drift(owner, writer):
    a, gone, new = pod("a", "n1"), pod("gone", "n1"), pod("new", "n1", resource_version="40")
    written(owner, writer, nodes("n1"), [a, gone])
    # Changed in the cache, not yet flushed at the dump: the rows are behind, by design,
    # and written (the owner moved on) before the comparison is recorded.
    feed(owner, watched("pods", "DELETED", gone), watched("pods", "ADDED", new))
    owner.apply(comparison(nodes("n1"), [a, new], "30"))
    compared = owner.feed.get(timeout=10)
    flushed(owner, writer)
    owner.apply(compared)
    report = latest_report(writer, owner)
    assert report["rows_compared"] and report["clean"], report


def test_rows_changed_between_the_dump_and_the_report_are_not_drift(owner, writer,
                                                                     monkeypatch):
    a, gone, new = pod("a", "n1"), pod("gone", "n1"), pod("new", "n1", resource_version="40")
    written(owner, writer, nodes("n1"), [a, gone])
    dumped, release = threading.Event(), threading.Event()
    real = row_drift.read_rows

    def read_later():
        dumped.set()
        assert release.wait(10), "the test never released the comparison"
        return real()
    monkeypatch.setattr(row_drift, "read_rows", read_later)
    owner.apply(comparison(nodes("n1"), [a, new], "30"))
    assert dumped.wait(10)
    # After the dump, and written before the rows are read: one pod left, one came.
    owner.apply(watched("pods", "DELETED", gone))
    owner.apply(watched("pods", "ADDED", new))
    flushed(owner, writer)
    release.set()
    owner.apply(owner.feed.get(timeout=10))
    report = latest_report(writer, owner)
    assert report["rows_compared"]
    assert report["rows_missing"] == report["rows_extra"] == report["rows_stale"] == []


def test_rows_are_not_compared_before_every_row_was_written(owner, writer):
    synced(owner, nodes("n1"), [pod("a", "n1")])
    feed(owner, comparison(nodes("n1"), [pod("a", "n1")], "30"))
    report = latest_report(writer, owner)
    assert report["rows_compared"] is False and "rows_extra" not in report


def test_rows_that_cannot_be_read_leave_the_caches_comparison_standing(owner, writer,
                                                                       monkeypatch):
    a = pod("a", "n1")
    written(owner, writer, nodes("n1"), [a])

    def down():
        raise OperationalError("connection failed: Connection refused")
    monkeypatch.setattr(row_drift, "read_rows", down)
    feed(owner, comparison(nodes("n1"), [a, pod("missed", "n1")], "30"))
    monkeypatch.undo()
    report = latest_report(writer, owner)
    assert report["rows_compared"] is False
    assert report["missed_pods"] == [uid(pod("missed", "n1"))]
