"""The owner's changes, written to the database by a thread of its own.

The owner hands over plain row dicts in batches; this thread upserts and
deletes them in one transaction per batch. Database latency therefore never
stalls the cache's one writer; a slow database only makes the bounded queue
push back.
"""
from dataclasses import dataclass, field
import logging
import queue
import threading

from django.db import close_old_connections, connections, transaction
import orjson
import psycopg

from dashboard.models import (ComparerRun, NodeRecord, PodRecord, SnapshotSample,
                              Transition)

log = logging.getLogger(__name__)

POD_FIELDS = ["namespace", "name", "node", "zone", "state", "binding_finished", "deadline",
              "phase", "resource_version", "labels", "milli_cpu", "memory", "priority", "seq",
              "changed_at", "owner_epoch"]
NODE_FIELDS = ["zone", "tree_index", "has_node", "generation", "pods", "requested",
               "non_zero_requested", "allocatable", "host_ports", "images", "changed_at",
               "owner_epoch"]
TRANSITION_FIELDS = ["seq", "at", "kind", "key", "namespace", "name", "node", "from_state",
                     "to_state", "cause", "actor", "generation"]
_CHUNK = 2000
MERGED_ROWS = 20_000   # at most this many rows in one catching-up transaction
STATEMENT_ROWS = 250   # rows per INSERT: psycopg adapts a statement's values holding the
                       # GIL (the owner's thread waited up to 21 ms at 1,700 rows, 11 at 250)


@dataclass
class Batch:
    pods: dict = field(default_factory=dict)        # uid -> row dict, or None to delete
    nodes: dict = field(default_factory=dict)       # name -> row dict, or None to delete
    transitions: list = field(default_factory=list)
    samples: list = field(default_factory=list)
    comparer_runs: list = field(default_factory=list)
    prune_epoch: int = None  # delete rows written by any other owner (after a full sync)

    def __bool__(self):
        return bool(self.pods or self.nodes or self.transitions or self.samples
                    or self.comparer_runs or self.prune_epoch is not None)

    def rows(self) -> int:
        return len(self.pods) + len(self.nodes) + len(self.transitions)

    def absorb(self, later: "Batch"):
        """Take in the batch that came after this one: its rows win, its lists follow."""
        self.pods.update(later.pods)
        self.nodes.update(later.nodes)
        self.transitions.extend(later.transitions)
        self.samples.extend(later.samples)
        self.comparer_runs.extend(later.comparer_runs)
        if later.prune_epoch is not None:
            self.prune_epoch = later.prune_epoch


def _chunks(items):
    items = list(items)
    for start in range(0, len(items), _CHUNK):
        yield items[start:start + _CHUNK]


class RawInsert:
    """One model's rows as INSERT ... ON CONFLICT statements.

    Why not the ORM's bulk_create: it built a model instance per row and compiled the
    statement anew each flush, 50-90 ms of the writer's thread for the rows of 1,000 cache
    events (bench/ui_bench.py), so pages heard of changes up to a second late. (An
    executemany of one row a statement was no faster: a round trip a row.)

    On PostgreSQL the rows go as one array a column, `INSERT ... SELECT FROM unnest(...)`,
    bound server-side: psycopg dumps a list in C, where a VALUES list of thousands of
    placeholders cost Python time per value (Django's client-side binding quotes each
    one, and psycopg re-parses a long query on every call): most of the writer's time,
    all of it holding the owner's GIL. SQLite takes multi-row VALUES, each value through
    its field's own preparation (JSON, datetimes), as the ORM would send it.
    """

    def __init__(self, model, fields, conflict: str, update: bool):
        meta = model._meta
        self.key = meta.pk.column if update else None
        self.key_field = meta.pk
        self.fields = [meta.get_field(name) for name in fields]
        self.prepared = [(f.name, f) for f in self.fields
                         if f.get_internal_type() in ("JSONField", "DateTimeField")]
        self.table, self.conflict, self.update = meta.db_table, conflict, update

    def _statement(self, connection, rows: int) -> str:
        quote = connection.ops.quote_name
        columns = ([self.key] if self.key else []) + [f.column for f in self.fields]
        if self.update:
            action = "DO UPDATE SET " + ", ".join(
                f"{quote(f.column)} = EXCLUDED.{quote(f.column)}" for f in self.fields)
        else:
            action = "DO NOTHING"
        values = "(" + ", ".join(["%s"] * len(columns)) + ")"
        return (f"INSERT INTO {quote(self.table)} ({', '.join(map(quote, columns))}) "
                f"VALUES {', '.join([values] * rows)} "
                f"ON CONFLICT ({quote(self.conflict)}) {action}")

    def _array_statement(self, connection) -> str:
        quote = connection.ops.quote_name
        fields = ([self.key_field] if self.key else []) + self.fields
        arrays = ", ".join(f"%s::{'text' if self._json(f) else f.db_type(connection)}[]"
                           for f in fields)
        picked = ", ".join(f"c{i}::jsonb" if self._json(f) else f"c{i}"
                           for i, f in enumerate(fields))
        if self.update:
            action = "DO UPDATE SET " + ", ".join(
                f"{quote(f.column)} = EXCLUDED.{quote(f.column)}" for f in self.fields)
        else:
            action = "DO NOTHING"
        return (f"INSERT INTO {quote(self.table)} ({', '.join(quote(f.column) for f in fields)}) "
                f"SELECT {picked} FROM unnest({arrays}) "
                f"AS u({', '.join(f'c{i}' for i in range(len(fields)))}) "
                f"ON CONFLICT ({quote(self.conflict)}) {action}")

    @staticmethod
    def _json(field) -> bool:
        return field.get_internal_type() == "JSONField"

    def _run_arrays(self, connection, rows):
        """PostgreSQL: a column a parameter (JSON as text, cast in the statement)."""
        if self.update:
            keys = [key for key, _ in rows]
            rows = [row for _, row in rows]
        columns = [keys] if self.update else []
        for f in self.fields:
            name = f.name
            if self._json(f):
                columns.append([None if row[name] is None else orjson.dumps(row[name]).decode()
                                for row in rows])
            else:
                columns.append([row[name] for row in rows])
        with psycopg.Cursor(connection.connection) as cursor:
            cursor.execute(self._array_statement(connection), columns)

    def run(self, connection, rows):
        """`rows`: (key, row dict) pairs when it updates, else row dicts."""
        if not rows:
            return
        if connection.vendor == "postgresql":
            self._run_arrays(connection, rows)
            return
        names = [f.name for f in self.fields]
        params = []
        for item in rows:
            key, row = item if self.update else (None, item)
            if self.prepared:
                row = dict(row)
                for name, f in self.prepared:
                    row[name] = f.get_db_prep_save(row[name], connection)
            params.append([key, *(row[name] for name in names)] if self.update
                          else [row[name] for name in names])
        width = len(names) + (1 if self.update else 0)
        per_statement = max(1, min(STATEMENT_ROWS,
                                   (connection.features.max_query_params or 30_000) // width))
        with connection.cursor() as cursor:
            for start in range(0, len(params), per_statement):
                chunk = params[start:start + per_statement]
                cursor.execute(self._statement(connection, len(chunk)),
                               [value for values in chunk for value in values])


POD_UPSERT = RawInsert(PodRecord, POD_FIELDS, conflict="uid", update=True)
NODE_UPSERT = RawInsert(NodeRecord, NODE_FIELDS, conflict="name", update=True)
TRANSITION_INSERT = RawInsert(Transition, TRANSITION_FIELDS, conflict="seq", update=False)


def write(batch: Batch):
    """Apply one batch in one transaction."""
    connection = connections["default"]
    with transaction.atomic():
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


def _merged(batches) -> Batch:
    """One batch holding `batches` in order (the first itself when it is alone: it is not
    changed, it stays the submitter's)."""
    if len(batches) == 1:
        return batches[0]
    merged = Batch()
    for batch in batches:
        merged.absorb(batch)
    return merged


class ProjectionWriter:
    """A thread that writes submitted batches in order.

    A writer that fell behind (a slow commit, a busy machine) writes everything
    queued as one batch, up to MERGED_ROWS rows: its lag then stays one commit
    long instead of growing by a commit per flush, and the pages that wait for a
    flush's publication (`then`) hear of it one commit after the owner let go of it.
    """

    def __init__(self, depth=32):
        self._queue = queue.Queue(maxsize=depth)
        self._thread = threading.Thread(target=self._run, name="projection", daemon=True)
        self.written = 0
        self.failed = 0
        self._idle = threading.Condition()
        self._submitted = 0

    def start(self):
        self._thread.start()
        return self

    def submit(self, batch: Batch, then=None):
        """Queue `batch`; `then()` runs once it is written (or failed), in submission order."""
        if batch or then is not None:
            with self._idle:
                self._submitted += 1
            self._queue.put((batch, then))

    def unwritten(self) -> int:
        """Batches submitted and not yet written (or failed)."""
        return self._submitted - self.written - self.failed

    def wait_idle(self, timeout=None) -> bool:
        """Block until every submitted batch has been written (or failed)."""
        with self._idle:
            return self._idle.wait_for(lambda: self.written + self.failed >= self._submitted,
                                       timeout)

    def close(self, timeout=30):
        self._queue.put(None)
        self._thread.join(timeout)

    def _write_with_retries(self, batch, attempts=4) -> str:
        """A database blip (restart, failover) must not lose history: retry, then give up loudly."""
        for attempt in range(1, attempts + 1):
            close_old_connections()
            try:
                write(batch)
                return "written"
            except Exception:
                log.exception("writing a batch of %d pods, %d nodes, %d transitions failed "
                              "(attempt %d of %d)", len(batch.pods), len(batch.nodes),
                              len(batch.transitions), attempt, attempts)
                connections.close_all()
                if attempt < attempts:
                    threading.Event().wait(0.5 * 2 ** attempt)
        return "failed"

    def _queued(self, first):
        """`first` and what queued behind it, as one batch; their `then`s in order; and
        whether a close request came after them."""
        batches, thens = [first[0]], [first[1]]
        rows = first[0].rows()
        while rows < MERGED_ROWS:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return _merged(batches), thens, False
            if item is None:
                return _merged(batches), thens, True
            batches.append(item[0])
            thens.append(item[1])
            rows += item[0].rows()
        return _merged(batches), thens, False

    def _run(self):
        try:
            closing = False
            while not closing:
                item = self._queue.get()
                if item is None:
                    return
                batch, thens, closing = self._queued(item)
                outcome = self._write_with_retries(batch) if batch else "written"
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
