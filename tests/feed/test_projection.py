"""The writer thread: a writer that fell behind writes what queued as one transaction,
in order (later rows win, deletes included), and still runs every batch's `then`."""
import threading

import pytest

from dashboard.feed import projection
from dashboard.feed.projection import Batch, ProjectionWriter
from dashboard.models import PodRecord, Transition

pytestmark = pytest.mark.django_db(transaction=True)


def row(name, state, seq):
    return {"namespace": "team", "name": name, "node": "n1", "zone": "", "state": state,
            "binding_finished": False, "deadline": None, "phase": "Running",
            "resource_version": str(seq), "labels": {}, "milli_cpu": 0, "memory": 0,
            "priority": 0, "seq": seq, "changed_at": "2026-11-22T10:00:00Z", "owner_epoch": 1}


def transition(seq, key):
    return {"seq": seq, "at": "2026-11-22T10:00:00Z", "kind": "pod_added", "key": key,
            "namespace": "team", "name": key, "node": "n1", "from_state": "Initial",
            "to_state": "Added", "cause": "watch", "actor": "", "generation": seq}


@pytest.fixture
def writes(monkeypatch):
    """The batches the writer commits, one entry a transaction."""
    committed = []
    original = projection.write

    def write(batch):
        committed.append((sorted(batch.pods), len(batch.transitions)))
        original(batch)
    monkeypatch.setattr(projection, "write", write)
    return committed


def test_a_writer_behind_writes_the_queue_as_one_transaction(writes):
    writer = ProjectionWriter().start()
    held, release, order = threading.Event(), threading.Event(), []

    def hold():   # keeps the writer busy after the first batch while three more queue up
        held.set()
        release.wait(10)
    try:
        writer.submit(Batch(pods={"a": row("a", "Assumed", 1)},
                            transitions=[transition(1, "a")]), then=hold)
        assert held.wait(10)
        writer.submit(Batch(pods={"a": row("a", "Added", 2), "b": row("b", "Added", 2)},
                            transitions=[transition(2, "a"), transition(3, "b")]),
                      then=lambda: order.append(2))
        writer.submit(Batch(pods={"b": None}), then=lambda: order.append(3))
        writer.submit(Batch(pods={"c": row("c", "Added", 4)}, transitions=[transition(4, "c")]),
                      then=lambda: order.append(4))
        release.set()
        assert writer.wait_idle(10)
    finally:
        writer.close()
    assert writes == [(["a"], 1), (["a", "b", "c"], 3)]
    assert order == [2, 3, 4]
    assert dict(PodRecord.objects.values_list("uid", "state")) == {"a": "Added", "c": "Added"}
    assert sorted(Transition.objects.values_list("seq", flat=True)) == [1, 2, 3, 4]
    assert (writer.written, writer.failed) == (4, 0)


def test_closing_behind_queued_batches_writes_them_first(writes):
    writer = ProjectionWriter().start()
    held, release = threading.Event(), threading.Event()

    def hold():
        held.set()
        release.wait(10)
    writer.submit(Batch(pods={"a": row("a", "Added", 1)}), then=hold)
    assert held.wait(10)
    writer.submit(Batch(pods={"b": row("b", "Added", 2)}))
    closing = threading.Thread(target=writer.close)
    closing.start()
    release.set()
    closing.join(20)
    assert writes == [(["a"], 0), (["b"], 0)]
    assert sorted(PodRecord.objects.values_list("uid", flat=True)) == ["a", "b"]
