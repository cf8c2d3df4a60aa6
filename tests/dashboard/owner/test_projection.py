"""The writer thread: a writer that fell behind writes what queued as one transaction,
in order (later rows win, deletes included), and still runs every batch's `then`; a
database outage is waited out, and nothing submitted meanwhile is lost."""
import functools
import threading

import pytest
from django.db import OperationalError
from redis.backoff import ExponentialWithJitterBackoff

from dashboard.models import PodRecord, Transition
from dashboard.owner import projection
from dashboard.owner.projection import Batch, ProjectionWriter
from tests.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def row(name, state, seq):
    return {"namespace": "team", "name": name, "node": "n1", "zone": "", "state": state,
            "binding_finished": False, "assumed_at": None, "deadline": None, "phase": "Running",
            "resource_version": str(seq), "labels": {}, "milli_cpu": 0, "memory": 0,
            "scalar_resources": {}, "priority": 0, "seq": seq, "changed_at": "2026-11-22T10:00:00Z", "owner_epoch": 1}


def transition(seq, key):
    return {"seq": seq, "at": "2026-11-22T10:00:00Z", "kind": "pod_added", "key": key,
            "namespace": "team", "name": key, "node": "n1", "from_state": "Initial",
            "to_state": "Added", "cause": "watch", "actor": "", "detail": "", "generation": seq,
            "replay": None}


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
        assert writer.unwritten() == 4     # the first counts once its `then` has run
        release.set()
        assert writer.wait_idle(10)
        assert writer.unwritten() == 0
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


def test_rows_read_back_as_written_json_times_and_nulls_included():
    from datetime import datetime, timezone

    from dashboard.models import NodeRecord
    pod = dict(row("a", "Assumed", 7), labels={"app": "web", "tier": "1"}, deadline=12.5,
               binding_finished=True, milli_cpu=2 ** 40)
    node = {"zone": "z1", "tree_index": 3, "has_node": True, "generation": 9, "pods": 1,
            "requested": {"milli_cpu": 100}, "non_zero_requested": {"milli_cpu": 100},
            "allocatable": {"milli_cpu": 4000, "pods": 110}, "host_ports": [["TCP", 80]],
            "images": 2, "labels": {"zone": "z1"}, "taints": [], "conditions": [],
            "unschedulable": False, "cpu_percent": 2.5, "memory_percent": None,
            "gpu_percent": None, "changed_at": "2026-11-22T10:00:01Z", "owner_epoch": 1}
    projection.write(Batch(pods={"a": pod, "b": row("b", "Added", 8)}, nodes={"n1": node},
                           transitions=[transition(7, "a")]))
    a = PodRecord.objects.get(uid="a")
    assert (a.labels, a.deadline, a.binding_finished, a.milli_cpu) == (
        {"app": "web", "tier": "1"}, 12.5, True, 2 ** 40)
    assert a.changed_at == datetime(2026, 11, 22, 10, tzinfo=timezone.utc)
    assert PodRecord.objects.get(uid="b").deadline is None
    n1 = NodeRecord.objects.get(name="n1")
    assert (n1.allocatable, n1.host_ports, n1.tree_index) == (
        {"milli_cpu": 4000, "pods": 110}, [["TCP", 80]], 3)
    assert Transition.objects.get(seq=7).key == "a"
    projection.write(Batch(pods={"a": dict(pod, labels={}, state="Added")},
                           transitions=[transition(7, "again")]))   # upsert; a seq once
    assert (PodRecord.objects.get(uid="a").state, Transition.objects.get(seq=7).key) == (
        "Added", "a")


def outage(monkeypatch, noted, held_from: int):
    """projection.write failing as an unreachable database's while `down` is set, each try
    noted (`noted(batch)` into `tries`); from try `held_from` on, a try waits for
    `submitted`, so that batches submitted meanwhile queue behind it (the retry after it
    takes them along; submitted between the merge and the try, they would go alone).
    Returns (down, tries, in_try, submitted)."""
    original, down, tries = projection.write, threading.Event(), []
    in_try, submitted = threading.Event(), threading.Event()

    def write(batch):
        tries.append(noted(batch))
        if down.is_set():
            if len(tries) >= held_from:
                in_try.set()
                submitted.wait(10)
            raise OperationalError("connection refused (test)")
        original(batch)
    monkeypatch.setattr(projection, "write", write)
    down.set()
    return down, tries, in_try, submitted


def test_a_database_outage_is_waited_out_and_what_queued_meanwhile_is_written(monkeypatch):
    # held from more tries than other failures get
    down, tries, in_try, submitted = outage(monkeypatch, lambda batch: len(batch.transitions),
                                            held_from=projection.ATTEMPTS + 1)
    writer = ProjectionWriter(backoff=ExponentialWithJitterBackoff(cap=0.02, base=0.005)).start()
    order = []
    try:
        writer.submit(Batch(pods={"a": row("a", "Added", 1)}, transitions=[transition(1, "a")]),
                      then=lambda: order.append(1))
        assert in_try.wait(10), "the writer's tries"
        writer.submit(Batch(pods={"b": row("b", "Added", 2)}, transitions=[transition(2, "b")]),
                      then=lambda: order.append(2))
        submitted.set()
        assert writer.unwritten() == 2
        down.clear()
        assert writer.wait_idle(10)
    finally:
        writer.close()
    assert order == [1, 2] and (writer.written, writer.failed) == (2, 0)
    assert tries[-1] == 2                              # the later batch went with the first
    assert sorted(Transition.objects.values_list("seq", flat=True)) == [1, 2]
    assert sorted(PodRecord.objects.values_list("uid", flat=True)) == ["a", "b"]


def test_a_retry_takes_in_what_queued_only_up_to_a_catching_up_transactions_rows(
        monkeypatch):
    """Issue 26: retries that took in everything queued grew past what the database could
    write in the bound, and never landed. Here 1 row fails, 4 more queue meanwhile: the
    retry takes 1 of them (2 rows, the cap), the next transactions the other 3, 2 at most
    each."""
    monkeypatch.setattr(projection, "MERGED_ROWS", 2)
    down, tries, in_try, submitted = outage(monkeypatch, lambda batch: sorted(batch.pods),
                                            held_from=1)
    writer = ProjectionWriter(backoff=ExponentialWithJitterBackoff(cap=0.02, base=0.005)).start()
    try:
        writer.submit(Batch(pods={"a": row("a", "Added", 1)}))
        assert in_try.wait(10), "the writer's first try"
        for seq, uid in enumerate("bcde", 2):
            writer.submit(Batch(pods={uid: row(uid, "Added", seq)}))
        down.clear()
        submitted.set()
        assert writer.wait_idle(10)
    finally:
        writer.close()
    assert tries == [["a"], ["a", "b"], ["c", "d"], ["e"]]
    assert (writer.written, writer.failed) == (5, 0)


def test_a_checkpoint_is_encoded_once_before_its_write_and_its_retries(monkeypatch):
    """Encoding a checkpoint of 600,000 pods took seconds of the writer's CPU inside the
    write's database deadline (issue 26: a batch of 10 pods and a checkpoint was cut at
    15 s); and each retry encoded it again, counting its pod entries twice."""
    from schedcache import Cache

    from dashboard.models import Checkpoint
    from dashboard.owner import checkpoints
    encodings, tries = [], []
    original_state = checkpoints.Capture.state

    def state(capture):
        encodings.append(len(tries))       # how many writes were tried before it
        return original_state(capture)
    monkeypatch.setattr(checkpoints.Capture, "state", state)
    original = projection.write

    def write(batch):
        tries.append(1)
        if len(tries) == 1:
            raise OperationalError("connection refused (test)")
        original(batch)
    monkeypatch.setattr(projection, "write", write)
    capture = checkpoints.capture(Cache(), seq=1, at="2026-11-22T10:00:00Z",
                                  snapshot_generation=0)
    writer = ProjectionWriter(backoff=ExponentialWithJitterBackoff(cap=0.02, base=0.005)).start()
    try:
        writer.submit(Batch(transitions=[transition(1, "a")], checkpoint=capture))
        assert writer.wait_idle(10)
    finally:
        writer.close()
    assert (encodings, len(tries)) == ([0], 2)
    assert Checkpoint.objects.get().seq == 1


def test_a_larger_batch_gets_longer_to_write(settings):
    """The bound that tells a database answering nothing from a busy one grows with the
    rows to write, past SCHEDVIEW_DB_WRITE_TIMEOUT, at WRITE_RATE_FLOOR rows a second."""
    settings.SCHEDVIEW_DB_WRITE_TIMEOUT = 15.0
    small = Batch(pods={"a": row("a", "Added", 1)}, transitions=[transition(1, "a")])
    large = Batch(pods={f"p{i}": row(f"p{i}", "Added", i) for i in range(10_000)},
                  transitions=[transition(i, f"p{i}") for i in range(10_000)])
    assert projection.write_bound(small) == 15.0
    assert projection.write_bound(large) == 20_000 / projection.WRITE_RATE_FLOOR


def test_submit_never_waits_on_a_hung_writer_and_everything_lands_after(writes):
    """Issue 22: a database that answers nothing froze the owner's thread on a full queue.
    Here the writer hangs in a write while ten times its depth of batches is submitted:
    every submit returns at once, the queue holds no more than its depth of places, and
    once the writer resumes every row, transition and `then` lands, in order."""
    writer = ProjectionWriter(depth=4).start()
    held, release, order = threading.Event(), threading.Event(), []

    def hold():
        held.set()
        release.wait(30)
    submitted = threading.Event()

    def submit_many():
        for seq in range(2, 42):
            uid = f"p{seq % 5}"
            writer.submit(Batch(pods={uid: row(uid, "Added", seq)},
                                transitions=[transition(seq, uid)]),
                          then=functools.partial(order.append, seq))
        submitted.set()
    try:
        writer.submit(Batch(pods={"a": row("a", "Added", 1)}), then=hold)
        assert held.wait(10)
        owner_thread = threading.Thread(target=submit_many)
        owner_thread.start()
        assert submitted.wait(5), "submit blocked on the hung writer"
        assert len(writer._queue) <= 4
        assert writer.unwritten() == 41
        assert writer.writing_for() == 0.0   # the writer is in a `then`, not a write
        release.set()
        assert writer.wait_idle(10)
        owner_thread.join(5)
    finally:
        release.set()
        writer.close()
    assert order == list(range(2, 42))
    assert sorted(Transition.objects.values_list("seq", flat=True)) == list(range(2, 42))
    assert dict(PodRecord.objects.exclude(uid="a").values_list("uid", "seq")) == {
        f"p{r}": max(seq for seq in range(2, 42) if seq % 5 == r) for r in range(5)}
    assert (writer.written, writer.failed) == (41, 0)


def test_writing_for_counts_the_write_in_progress(monkeypatch):
    started, release = threading.Event(), threading.Event()

    def write(batch):
        started.set()
        release.wait(30)
    monkeypatch.setattr(projection, "write", write)
    writer = ProjectionWriter().start()
    try:
        assert writer.writing_for() == 0.0
        writer.submit(Batch(pods={"a": row("a", "Added", 1)}))
        assert started.wait(10)
        wait_for(lambda: writer.writing_for() > 0.05, 5, "the write to be counted")
        release.set()
        assert writer.wait_idle(10)
        assert writer.writing_for() == 0.0
    finally:
        release.set()
        writer.close()


def test_a_cut_in_the_middle_of_a_copy_reads_as_the_database_unreachable():
    """The COPY path writes through a raw psycopg cursor; its errors must come out as
    Django's, or a cut is logged as a failed write (a traceback) instead of being waited out."""
    import os
    import socket

    from django.db import connections
    connection = connections["default"]
    if connection.vendor != "postgresql":
        pytest.skip("COPY is the PostgreSQL path")
    connection.ensure_connection()
    try:
        with socket.socket(fileno=os.dup(connection.connection.fileno())) as sock:
            sock.shutdown(socket.SHUT_RDWR)
        with pytest.raises(OperationalError):
            projection.POD_UPSERT.run(connection, [("a", row("a", "Added", 1))])
    finally:
        connection.close()
