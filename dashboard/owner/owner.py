"""The cache owner: the one process that writes the cache.

It applies what the decoder process hands over (watch events and lists, `apply.py`;
the claims there are, which every diagnosis looks pods' claims up in, `claims`)
and the commands other processes send (`handlers.py`), changes the cache's
assumptions only through the doors of `changes.py`, compares the cache with the
cluster (`comparing.py`), and hands every transition on: to the database (read
model rows, `rows.py`, and history, in batches) and to the browsers (one
channel-layer message a flush), with its status (`status.py`). Everything runs in
one thread in small steps that report whether they found work, so tests drive it
step by step.
"""
import functools
import queue
import time

import orjson

from schedcache import Cache, Snapshot
from scheduling.diagnosis import Diagnoser

from dashboard.kube.claims import ClaimNames
from dashboard.kube.reflector import CLAIMS
from dashboard.owner.apply import FeedApplier
from dashboard.owner.changes import CacheChanges
from dashboard.owner.checkpoints import Checkpoints, ReplayNotes, capture
from dashboard.owner.commands import CommandServer
from dashboard.owner.comparing import CompareFailed, Compared, Comparer, CompareRequest
from dashboard.owner.decoder import (
    DecodedDenied,
    DecodedEvents,
    DecodedFeed,
    DecodedList,
    DecodedPage,
    DecodedRepairs,
)
from dashboard.owner.feed_lag import FeedLag
from dashboard.owner.handlers import CommandHandlers, command_cause
from dashboard.owner.journal import Journal, utc
from dashboard.owner.owner_metrics import OwnerMetrics
from dashboard.owner.pending_pods import PendingPods
from dashboard.owner.pending_reasons import PendingReasons
from dashboard.owner.rows import ReadModelRows
from dashboard.owner.status import owner_status
from dashboard.runtime.redis_outage import RedisBackoff
from dashboard.wire.keys import OWNER_SEQ, OWNER_STATUS, OWNER_STATUS_TTL

_LAGGING = (DecodedEvents, DecodedPage)   # stamped with when the decoder read them
_DECODED = (DecodedEvents, DecodedPage, DecodedList, DecodedDenied, DecodedRepairs)


class CacheOwner:
    def __init__(self, cache: Cache, *, command_server: CommandServer = None, writer=None,
                 publisher=None, redis=None, seq_base=0, epoch=0, lister=None, heal=None,
                 clock=time.time, bind_stuck_after=10.0, bind_deadline=60.0, fence=None,
                 term=None, checkpoint_period=0.0):
        self.cache = cache
        self.feed = queue.Queue(maxsize=200_000)
        self.feed_lag = FeedLag(self.feed)
        self.commands = command_server
        self.writer = writer
        self.publisher = publisher
        self.redis = redis
        # The lease term every write and publish carries, and Redis's side of the fence
        # (fence.py); None: unfenced (no lease, as in tests of one owner).
        self.fence, self.term = fence, term
        self.clock = clock
        self.scheduler_verbs = {}     # op -> handler: kube-scheduler's, for the owner's listener
        self.fit_reason = None        # (pod, node) -> why it does not fit, or None (assume)
        # () -> dict merged into status(): the extender's, the watches' silence (runner)
        self.status_parts = []
        self.redis_backoff = RedisBackoff("cache owner")   # every call of the loop to Redis
        self.metrics = OwnerMetrics()  # what /metrics shows, fed at each flush
        self.bind_stuck_after = bind_stuck_after   # seconds until an unfinished bind is stuck
        self.bind_deadline = bind_deadline         # ... and until it is forgotten
        self.stats = {"applied": 0, "skipped": 0, "corrupted": 0, "commands": 0}
        self.snapshot = Snapshot()
        self._pruned = False
        self.checkpoints = Checkpoints(checkpoint_period, clock)
        # The journal subscribes first: every event is stamped before anyone else sees it.
        self.journal = Journal(cache, clock, seq_base)
        self.changes = CacheChanges(cache, self.journal)
        self.replay_notes = ReplayNotes(cache)
        pending = PendingPods()       # uid -> pod: the feed's, the rows read it
        self.rows = ReadModelRows(cache, self.journal, pending, epoch, clock)
        self.applier = FeedApplier(cache, self.journal, self.rows, self.stats, pending)
        # Why pods pend: the `diagnose` command's, and the pending pods' reasons each flush
        # counts for the metrics; its records move only when a diagnosis is made. The
        # claims are handed to it once listed (_apply_claims): until then it names a pod's
        # claims unchecked rather than missing.
        self.claims = ClaimNames()
        self.diagnoser = Diagnoser(cache)
        self.pending_reasons = PendingReasons(self.diagnoser, cache, pending)
        self.applier.on_unpended = self.pending_reasons.forget
        self.comparer = Comparer(cache, self.journal, self.feed, self.applier.removed,
                                 self.stuck_binds, clock, rows=self.rows, writer=writer,
                                 rows_written=lambda: self._pruned, pending=pending)
        self.comparer.lister, self.comparer.heal = lister, heal
        if command_server is not None:
            self.register(CommandHandlers(self).handlers())

    # --- what the parts hold, as the runner, the extender and the tests read it -----------------
    @property
    def pending(self) -> dict:
        """uid -> lean Mapping of the unbound pods the watch shows."""
        return self.applier.pending

    @property
    def synced(self) -> dict:
        return self.applier.synced

    @property
    def seq_base(self) -> int:
        return self.journal.seq_base

    @property
    def latest_report(self):
        return self.comparer.latest_report

    def watched_pod(self, uid):
        """The pod as the watch has shown it (pending or cached), else None."""
        return self.applier.watched_pod(uid)

    # --- the feed -------------------------------------------------------------------------------
    def drain_feed(self, limit=5000, wait=0.0) -> int:
        """Apply queued feed items until `limit` events are done, waiting up to `wait`
        seconds for the first; returns how many."""
        done = 0
        while done < limit:
            try:
                item = self.feed.get(timeout=wait) if wait and not done else self.feed.get_nowait()
            except queue.Empty:
                break
            done += self.apply(item)
        return done

    def apply(self, item) -> int:
        """Apply one feed item (the decoder's, or the comparer's); returns how many events
        it held (a batch holds many)."""
        if type(item) is DecodedFeed:     # unpacked only now: see decoder.py's module doc
            return sum(self.apply(part) for part in item.unpack())
        if type(item) in _DECODED:
            if type(item) in _LAGGING:
                self.feed_lag.applied(item.received, self.clock())
            if item.kind == CLAIMS:
                return self._apply_claims(item)
            if type(item) is DecodedDenied:
                return 0      # the decoder's log said it; the cache keeps what it holds
            return self.applier.apply(item)
        if type(item) is CompareRequest:
            self.comparer.compare(item)
        elif type(item) is Compared:
            self.comparer.record(item)
        elif type(item) is CompareFailed:
            self.comparer.failed(item)
        else:
            raise TypeError(f"the owner's feed takes decoded items and comparisons, not "
                            f"{type(item).__name__}")
        return 1

    def _apply_claims(self, item) -> int:
        """The claims' watch: once a list is complete the diagnoser looks pods' claims up
        in them (kube-scheduler's VolumeBinding PreFilter); a denial (403) makes them
        unknown again. When that flips, or a claim a pending pod names comes or goes, the
        pending pods' reasons are recounted (the Pending page and the metric)."""
        claims = self.claims
        if type(item) is DecodedPage:
            claims.page(item.items, item.first)
            return len(item.items)
        known, changed, done = claims.known, (), 1
        if type(item) is DecodedEvents:
            changed = {key for etype, key in item.events if claims.watched(etype, key)}
            done = len(item.events)
        elif type(item) is DecodedList:
            changed = claims.listed()
        else:
            claims.deny()
        self.diagnoser.claims = claims if claims.known else None
        if known != claims.known or (changed and any(
                key in changed for entry in self.pending.entries() for key in entry.claims)):
            self.pending_reasons.recount()
        return done

    # --- binds that never finish ----------------------------------------------------------------
    def stuck_binds(self) -> list:
        """(uid, node) of assumed pods whose binding has not finished within
        bind_stuck_after seconds, oldest first."""
        return self.journal.assumptions.unfinished(self.cache, self.clock(),
                                                   self.bind_stuck_after)

    def forget_overdue_binds(self, now=None) -> int:
        """The bind deadline's door (see changes.py); returns how many were forgotten."""
        return self.changes.forget_overdue_binds(self.clock() if now is None else now,
                                                 self.bind_deadline)

    # --- commands -------------------------------------------------------------------------------
    def register(self, handlers: dict, cause: str = None):
        """Serve more commands over Redis (see `caused`)."""
        self.commands.handlers.update(self.caused(handlers, cause))

    def caused(self, handlers: dict, cause: str = None) -> dict:
        """The handlers, counted and timed (metrics). The doors stamp the changes they
        make; events a handler causes otherwise (the algorithm's snapshot in a filter)
        carry `cause` (by default the actor's, see handlers.command_cause) and the actor."""
        def caused(op, handler):
            def run(args, actor):
                self.stats["commands"] += 1
                self.journal.stamp(cause or command_cause(actor), actor)
                with self.metrics.timing(op):
                    return handler(args, actor)
            return run
        return {op: caused(op, h) for op, h in handlers.items()}

    def status(self) -> dict:
        return owner_status(self)

    # --- flushing -------------------------------------------------------------------------------
    def note_leader(self, holder: str):
        """The handover, as the first event of this owner's history."""
        self.journal.note_leader(holder)

    def take_snapshot(self):
        """Bring the owner's snapshot up to date and record what changed, if anything."""
        before = self.snapshot.generation
        changed = self.cache.recently_changed(before)
        self.cache.update_snapshot(self.snapshot)
        if self.snapshot.generation != before:
            self.journal.batch.samples.append(
                {"at": utc(self.clock()), "generation": self.snapshot.generation,
                 "cache_generation": self.cache.generation, "changed_nodes": changed[:500]})

    def flush(self, calling: bool = False) -> int:
        """Hand the changes since the last flush to the writer and the publisher;
        `calling`: kube-scheduler is calling (the sweep of pending reasons yields to it)."""
        events, bind_seconds, batch = self.journal.take()
        replays = self.replay_notes.take()
        seq_base = self.journal.seq_base
        published = []
        for event, cause, actor, at, detail in events:
            row = {"seq": seq_base + event.seq, "at": utc(at), "kind": event.kind,
                   "key": event.key, "namespace": event.namespace, "name": event.name,
                   "node": event.node, "from_state": event.from_state or "",
                   "to_state": event.to_state or "", "cause": cause, "actor": actor,
                   "detail": detail, "generation": event.generation}
            published.append(dict(row, at=at))
            if event.kind != "snapshot_updated":
                row["replay"] = replays.get(event.seq)
                batch.transitions.append(row)
        if self.checkpoints.due() and all(self.synced.values()):
            batch.checkpoint = capture(self.cache, seq_base + self.cache.event_seq,
                                       utc(self.clock()), self.snapshot.generation,
                                       self.checkpoints.entries)
            self.checkpoints.taken()
        self.rows.build(batch)
        if not self._pruned and all(self.synced.values()) and not self.rows.backlog():
            batch.prune_epoch, self._pruned = self.rows.epoch, True
        now = self.clock()
        self.pending_reasons.step(now, self.feed_lag.seconds(now), calling)
        status = self.status()
        self.feed_lag.new_window()
        self.metrics.record_flush(events, status, batch.comparer_runs, bind_seconds)
        publish = None
        batch.term = self.term
        if self.publisher is not None:
            publish = functools.partial(self.publisher.publish, published, status, self.term)
        if self.writer is not None:
            # Pages re-render from the read model, so they hear of a change only once
            # its rows are written; published first, they would draw the old state.
            self.writer.submit(batch, then=publish)
        elif publish is not None:
            publish()
        if self.redis is not None:
            # While Redis is unreachable the status waits for the flush after it answers
            # again: it says everything up to then, and the sequence number stays the latest.
            values = {OWNER_STATUS: (orjson.dumps(dict(status, at=self.clock())),
                                     OWNER_STATUS_TTL),
                      OWNER_SEQ: (status["seq"], 0)}
            if self.term is None:
                pipe = self.redis.pipeline()
                for key, (value, ttl) in values.items():
                    pipe.set(key, value, ex=ttl or None)
                self.redis_backoff.attempt(pipe.execute)
            else:
                self.redis_backoff.attempt(self.fence.set, self.term, values)
        return len(events)
