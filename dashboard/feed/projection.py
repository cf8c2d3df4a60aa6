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

from dashboard.models import (ComparerRun, NodeRecord, PodRecord, SnapshotSample,
                              Transition)

log = logging.getLogger(__name__)

POD_FIELDS = ["namespace", "name", "node", "zone", "state", "binding_finished", "deadline",
              "phase", "resource_version", "labels", "milli_cpu", "memory", "priority", "seq",
              "changed_at", "owner_epoch"]
NODE_FIELDS = ["zone", "tree_index", "has_node", "generation", "pods", "requested",
               "non_zero_requested", "allocatable", "host_ports", "images", "changed_at",
               "owner_epoch"]
_CHUNK = 2000


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


def _chunks(items):
    items = list(items)
    for start in range(0, len(items), _CHUNK):
        yield items[start:start + _CHUNK]


def write(batch: Batch):
    """Apply one batch in one transaction."""
    with transaction.atomic():
        upserts = [PodRecord(uid=uid, **row) for uid, row in batch.pods.items() if row is not None]
        for chunk in _chunks(upserts):
            PodRecord.objects.bulk_create(chunk, update_conflicts=True, unique_fields=["uid"],
                                          update_fields=POD_FIELDS)
        for chunk in _chunks(uid for uid, row in batch.pods.items() if row is None):
            PodRecord.objects.filter(uid__in=chunk).delete()
        upserts = [NodeRecord(name=name, **row) for name, row in batch.nodes.items()
                   if row is not None]
        for chunk in _chunks(upserts):
            NodeRecord.objects.bulk_create(chunk, update_conflicts=True, unique_fields=["name"],
                                           update_fields=NODE_FIELDS)
        for chunk in _chunks(n for n, row in batch.nodes.items() if row is None):
            NodeRecord.objects.filter(name__in=chunk).delete()
        for chunk in _chunks(Transition(**t) for t in batch.transitions):
            Transition.objects.bulk_create(chunk, ignore_conflicts=True)
        if batch.prune_epoch is not None:
            PodRecord.objects.exclude(owner_epoch=batch.prune_epoch).delete()
            NodeRecord.objects.exclude(owner_epoch=batch.prune_epoch).delete()
        SnapshotSample.objects.bulk_create(SnapshotSample(**s) for s in batch.samples)
        ComparerRun.objects.bulk_create(ComparerRun(**r) for r in batch.comparer_runs)


class ProjectionWriter:
    """A thread that writes submitted batches in order."""

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

    def _run(self):
        try:
            while True:
                item = self._queue.get()
                if item is None:
                    return
                batch, then = item
                outcome = self._write_with_retries(batch) if batch else "written"
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
