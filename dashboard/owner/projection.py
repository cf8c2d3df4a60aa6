"""The owner's changes, written to the database by a thread of its own.

The owner hands over plain row dicts in batches; this thread upserts and
deletes them in one transaction per batch. Database latency therefore never
stalls the cache's one writer: a slow or hung database only makes the queue's
batches merge (ProjectionWriter.submit) until it answers.
"""
import collections
import logging
import threading
import time

import orjson
import psycopg
from django.conf import settings
from django.db import (
    InterfaceError,
    OperationalError,
    close_old_connections,
    connections,
    transaction,
)
from redis.backoff import ExponentialWithJitterBackoff

from dashboard.models import (
    AuditAction,
    Checkpoint,
    ComparerRun,
    NodeRecord,
    PodRecord,
    SnapshotSample,
    Transition,
)
from dashboard.owner.batch import Batch
from dashboard.owner.fence import StaleTerm, hold_term
from dashboard.runtime.db_deadline import bounded

log = logging.getLogger(__name__)

POD_FIELDS = ["namespace", "name", "node", "zone", "state", "binding_finished", "assumed_at",
              "deadline", "phase", "resource_version", "labels", "milli_cpu", "memory",
              "scalar_resources", "priority", "seq", "changed_at", "owner_epoch"]
NODE_FIELDS = ["zone", "tree_index", "has_node", "generation", "pods", "requested",
               "non_zero_requested", "allocatable", "host_ports", "images", "labels", "taints",
               "conditions", "unschedulable", "cpu_percent", "memory_percent", "gpu_percent",
               "changed_at", "owner_epoch"]
TRANSITION_FIELDS = ["seq", "at", "kind", "key", "namespace", "name", "node", "from_state",
                     "to_state", "cause", "actor", "detail", "generation", "replay"]
_CHUNK = 2000
MERGED_ROWS = 20_000   # at most this many rows in one catching-up transaction
ATTEMPTS = 4           # tries of a batch that fails for another reason than an outage
# Rows a second that even a busy database writes (node rows with their details, pods,
# transitions): a batch gets longer than SCHEDVIEW_DB_WRITE_TIMEOUT when that rate needs it.
WRITE_RATE_FLOOR = 200


def write_bound(batch: Batch) -> float:
    """Seconds `batch`'s write may wait on the database before it counts as answering
    nothing (issue 22). A fixed bound never let a large batch land (issue 26): at 20,000
    nodes the first sync's batches took longer than 15 s, each retry took in what had
    queued meanwhile and took longer still, and the read model stayed half written."""
    return max(settings.SCHEDVIEW_DB_WRITE_TIMEOUT, batch.rows() / WRITE_RATE_FLOOR)


def _chunks(items):
    items = list(items)
    for start in range(0, len(items), _CHUNK):
        yield items[start:start + _CHUNK]


class RawInsert:
    """One model's rows as INSERT ... ON CONFLICT statements.

    Why not the ORM's bulk_create: it builds a model instance per row and compiles the
    statement anew each flush, tens of milliseconds of the writer's thread at 1,000 cache
    events a second, so pages would hear of changes up to a second late. (An executemany
    of one row a statement is no faster: a round trip a row.)

    On PostgreSQL the rows are COPYed into a staging table and upserted from it with one
    statement: psycopg formats COPY rows in C. Placeholders cost Python time per value:
    a VALUES list of thousands (quoted one by one by Django's client-side binding, the
    long query parsed again each call) costs an order of magnitude more CPU than COPY,
    and the writer's CPU holds the owner process's GIL. SQLite
    takes multi-row VALUES, each value through its field's own preparation (JSON,
    datetimes), as the ORM would send it.
    """

    def __init__(self, model, fields, conflict: str, update: bool):
        meta = model._meta
        self.fields = [meta.get_field(name) for name in fields]
        # The columns an INSERT names: the key first when rows come keyed (upserts).
        self.inserted = ([meta.pk] if update else []) + self.fields
        self.names = [f.name for f in self.fields]
        self.json_at = [i for i, f in enumerate(self.inserted)
                        if f.get_internal_type() == "JSONField"]
        self.prepared_at = [(i, f) for i, f in enumerate(self.inserted)
                            if f.get_internal_type() in ("JSONField", "DateTimeField")]
        self.table, self.conflict, self.update = meta.db_table, conflict, update

    def _values(self, item) -> list:
        """A row's values in `inserted` order; `item` is (key, row) when it updates."""
        if self.update:
            key, row = item
            return [key, *map(row.__getitem__, self.names)]
        return list(map(item.__getitem__, self.names))

    def _statement(self, connection, rows: int) -> str:
        quote = connection.ops.quote_name
        values = "(" + ", ".join(["%s"] * len(self.inserted)) + ")"
        columns = ", ".join(quote(f.column) for f in self.inserted)
        return (f"INSERT INTO {quote(self.table)} ({columns}) "
                f"VALUES {', '.join([values] * rows)} "
                f"ON CONFLICT ({quote(self.conflict)}) {self._action(connection)}")

    def _run_copy(self, connection, rows):
        """PostgreSQL: COPY the rows into a session's staging table shaped like the model's
        columns, then one INSERT ... SELECT from it; the staging table is emptied after."""
        quote = connection.ops.quote_name
        columns = ", ".join(quote(f.column) for f in self.inserted)
        staging = quote(f"staging_{self.table}")
        # The raw cursor's errors are raised as Django's, so a cut reads as the database
        # being unreachable (retried quietly) and not as a failed write.
        with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cursor:
            cursor.execute(f"CREATE TEMP TABLE IF NOT EXISTS {staging} AS "
                           f"SELECT {columns} FROM {quote(self.table)} WITH NO DATA")
            with cursor.copy(f"COPY {staging} ({columns}) FROM STDIN") as copy:
                for item in rows:
                    values = self._values(item)
                    for i in self.json_at:
                        if values[i] is not None:
                            values[i] = orjson.dumps(values[i]).decode()
                    copy.write_row(values)
            cursor.execute(f"INSERT INTO {quote(self.table)} ({columns}) SELECT {columns} "
                           f"FROM {staging} ON CONFLICT ({quote(self.conflict)}) "
                           f"{self._action(connection)}")
            cursor.execute(f"TRUNCATE {staging}")

    def _action(self, connection) -> str:
        if not self.update:
            return "DO NOTHING"
        quote = connection.ops.quote_name
        return "DO UPDATE SET " + ", ".join(
            f"{quote(f.column)} = EXCLUDED.{quote(f.column)}" for f in self.fields)

    def run(self, connection, rows):
        """`rows`: (key, row dict) pairs when it updates, else row dicts."""
        if not rows:
            return
        if connection.vendor == "postgresql":
            self._run_copy(connection, rows)
            return
        params = []
        for item in rows:
            values = self._values(item)
            for i, f in self.prepared_at:
                values[i] = f.get_db_prep_save(values[i], connection)
            params.append(values)
        per_statement = max(1, (connection.features.max_query_params or 30_000)
                            // len(self.inserted))
        with connection.cursor() as cursor:
            for start in range(0, len(params), per_statement):
                chunk = params[start:start + per_statement]
                cursor.execute(self._statement(connection, len(chunk)),
                               [value for values in chunk for value in values])


POD_UPSERT = RawInsert(PodRecord, POD_FIELDS, conflict="uid", update=True)
NODE_UPSERT = RawInsert(NodeRecord, NODE_FIELDS, conflict="name", update=True)
TRANSITION_INSERT = RawInsert(Transition, TRANSITION_FIELDS, conflict="seq", update=False)


def write(batch: Batch):
    """Apply one batch in one transaction (none of it when its term is stale: StaleTerm)."""
    connection = connections["default"]
    with transaction.atomic():
        if batch.term is not None:
            hold_term(batch.term)
        POD_UPSERT.run(connection, [(uid, row) for uid, row in batch.pods.items()
                                    if row is not None])
        for chunk in _chunks(uid for uid, row in batch.pods.items() if row is None):
            PodRecord.objects.filter(uid__in=chunk).delete()
        NODE_UPSERT.run(connection, [(name, row) for name, row in batch.nodes.items()
                                     if row is not None])
        for chunk in _chunks(n for n, row in batch.nodes.items() if row is None):
            NodeRecord.objects.filter(name__in=chunk).delete()
        TRANSITION_INSERT.run(connection, batch.transitions)
        if batch.prune_epoch is not None:
            PodRecord.objects.exclude(owner_epoch=batch.prune_epoch).delete()
            NodeRecord.objects.exclude(owner_epoch=batch.prune_epoch).delete()
        SnapshotSample.objects.bulk_create(SnapshotSample(**s) for s in batch.samples)
        ComparerRun.objects.bulk_create(ComparerRun(**r) for r in batch.comparer_runs)
        AuditAction.objects.bulk_create(AuditAction(**a) for a in batch.audits)
        if batch.checkpoint is not None:
            Checkpoint.objects.bulk_create([Checkpoint(**batch.checkpoint.row())],
                                           ignore_conflicts=True)


def _merged(batches) -> Batch:
    """One batch holding `batches` in order (the first itself when it is alone: it is not
    changed, it stays the submitter's)."""
    if len(batches) == 1:
        return batches[0]
    merged = Batch()
    for batch in batches:
        merged.absorb(batch)
    return merged


class _Queued:
    """One place in the writer's queue: a batch and the `then`s of what it holds. `owned`:
    the batch is the writer's own merge, so later batches may be absorbed into it (a
    submitter's batch is never changed)."""
    __slots__ = ("batch", "thens", "owned")

    def __init__(self, batch, then):
        self.batch, self.thens, self.owned = batch, [then], False

    def absorb(self, batch, then):
        if not self.owned:
            self.batch, self.owned = _merged([self.batch, batch]), True
        else:
            self.batch.absorb(batch)
        self.thens.append(then)


class ProjectionWriter:
    """A thread that writes submitted batches in order.

    A writer that fell behind (a slow commit, a busy machine) writes everything
    queued as one batch, up to MERGED_ROWS rows: its lag then stays one commit
    long instead of growing by a commit per flush, and the pages that wait for a
    flush's publication (`then`) hear of it one commit after the owner let go of it.

    `submit` never blocks the owner's thread (issue 22: a hung database froze it for
    seconds at a time on a full queue). Past `depth` places, a new batch is absorbed into
    the last one: rows are keyed (uid, node name), so a later row replaces an earlier one
    and the memory held stays that of the rows that changed, while transitions and the
    other lists keep their order. Everything lands, in order, once the database answers.
    """

    def __init__(self, depth=32, backoff=None):
        self._depth = depth
        self._queue = collections.deque()   # of _Queued, oldest first
        self._closing = False
        self._thread = threading.Thread(target=self._run, name="projection", daemon=True)
        self.written = 0
        self.failed = 0
        self.stale = False     # a batch's term was stale: this writer writes nothing more
        self._idle = threading.Condition()   # guards the queue and the counts
        self._submitted = 0
        self._writing_since = None   # monotonic time the write in progress began
        # pauses between tries while the database is unreachable
        self._backoff = backoff or ExponentialWithJitterBackoff(cap=5.0, base=0.25)

    def start(self):
        self._thread.start()
        return self

    def submit(self, batch: Batch, then=None):
        """Queue `batch`; `then()` runs once it is written (or failed), in submission order.
        Returns at once, whatever the writer is doing."""
        if batch or then is not None:
            with self._idle:
                self._submitted += 1
                if len(self._queue) >= self._depth:
                    self._queue[-1].absorb(batch, then)
                else:
                    self._queue.append(_Queued(batch, then))
                self._idle.notify_all()

    def unwritten(self) -> int:
        """Batches submitted and not yet written (or failed)."""
        return self._submitted - self.written - self.failed

    def writing_for(self) -> float:
        """Seconds the write in progress has taken so far (retries of an outage included);
        0 when the writer waits for work. Health says when the writes back up."""
        since = self._writing_since
        return 0.0 if since is None else max(0.0, time.monotonic() - since)

    def submitted(self) -> int:
        """Batches submitted so far: what `wait_written` waits for."""
        return self._submitted

    def wait_written(self, submitted: int, timeout=None) -> bool:
        """Block until the first `submitted` batches have been written (or failed)."""
        with self._idle:
            return self._idle.wait_for(lambda: self.written + self.failed >= submitted,
                                       timeout)

    def wait_idle(self, timeout=None) -> bool:
        """Block until every submitted batch has been written (or failed)."""
        with self._idle:
            return self._idle.wait_for(lambda: self.written + self.failed >= self._submitted,
                                       timeout)

    def close(self, timeout=30):
        with self._idle:
            self._closing = True
            self._idle.notify_all()
        self._thread.join(timeout)

    def _write_until_done(self, batch, thens, closing):
        """Write `batch`: (the `then`s of what was written, closing, "written" | "failed").

        While the database is unreachable (OperationalError, InterfaceError) it keeps
        trying, with backoff, so the history loses nothing of what happened meanwhile;
        the batches that queue up behind are taken into the one it retries, up to
        MERGED_ROWS rows, so they land in one transaction once it answers (the rest in
        the next). Any other failure, or being closed, gives up after
        ATTEMPTS tries, loudly."""
        failures = 0
        while True:
            close_old_connections()
            try:
                if batch.checkpoint is not None:
                    batch.checkpoint.row()   # encoded before the deadline: CPU, not the database
                # A database that answers nothing is given up after the bound, and the
                # write retried on a new connection as after a cut (issue 22).
                with bounded(connections["default"], write_bound(batch)):
                    write(batch)
                return thens, closing, "written"
            except StaleTerm as error:
                log.warning("%s; this owner's writes end (%d pods, %d nodes, %d transitions "
                            "not written)", error, len(batch.pods), len(batch.nodes),
                            len(batch.transitions))
                return thens, closing, "stale"
            except (OperationalError, InterfaceError) as error:
                unreachable = True
                failures += 1
                log.warning("the database is unreachable; %d pods, %d nodes, %d transitions "
                            "wait (try %d): %s", len(batch.pods), len(batch.nodes),
                            len(batch.transitions), failures, error)
            except Exception:
                unreachable = False
                failures += 1
                log.exception("writing a batch of %d pods, %d nodes, %d transitions failed "
                              "(attempt %d of %d)", len(batch.pods), len(batch.nodes),
                              len(batch.transitions), failures, ATTEMPTS)
            connections.close_all()
            if failures >= ATTEMPTS and (closing or not unreachable):
                return thens, closing, "failed"
            threading.Event().wait(self._backoff.compute(failures))
            if not closing and batch.rows() < MERGED_ROWS:
                later, later_thens, closing = self._taken(batch.rows(), [], [])
                batch = _merged([batch, *later])
                thens.extend(later_thens)

    def _taken(self, rows, batches, thens):
        """Add what is queued now to `batches` and `thens`, up to MERGED_ROWS rows in all
        with the `rows` already taken (at least one place); also whether the writer is
        closing."""
        with self._idle:
            while self._queue and (not batches or rows < MERGED_ROWS):
                place = self._queue.popleft()
                batches.append(place.batch)
                thens.extend(place.thens)
                rows += place.batch.rows()
            return batches, thens, self._closing

    def _next(self):
        """Wait for work: what queued, merged, with its `then`s, and whether the writer is
        closing; None when it closed with nothing queued."""
        with self._idle:
            self._idle.wait_for(lambda: self._queue or self._closing)
            if not self._queue:
                return None
        batches, thens, closing = self._taken(0, [], [])
        return _merged(batches), thens, closing

    def _run(self):
        try:
            while (work := self._next()) is not None:
                batch, thens, closing = work
                outcome = "stale" if self.stale else "written"
                if batch and not self.stale:
                    self._writing_since = time.monotonic()
                    thens, closing, outcome = self._write_until_done(batch, thens, closing)
                    self._writing_since = None
                if outcome == "stale":
                    # Nothing after a refused write runs: its publication least of all.
                    self.stale, thens = True, [None] * len(thens)
                    outcome = "failed"
                for then in thens:
                    if then is not None:
                        try:
                            then()
                        except Exception:
                            log.exception("after writing a batch: %r failed", then)
                    with self._idle:
                        setattr(self, outcome, getattr(self, outcome) + 1)
                        self._idle.notify_all()
        finally:
            connections.close_all()
