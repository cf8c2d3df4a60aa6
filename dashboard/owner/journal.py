"""What happened to the cache since the owner's last flush, and who caused it.

Every cache event is stamped, as it is emitted, with the cause, actor and detail (why,
when a door was told: a failed bind's API server answer) of the change under way (set
by whoever makes the change: the feed, a door of `changes.py`) and the owner's clock. The flush takes the stamped events and the
batch of rows gathered beside them (audits, comparisons, snapshot samples) in one go.
"""
from datetime import datetime, timezone

from schedcache.events import CacheEvent

from dashboard.owner.assumptions import Assumptions
from dashboard.owner.batch import Batch
from dashboard.wire.live import OWNER_LEADING

DETAIL_MAX = 1000     # characters of a detail kept: an API server's message is a sentence


def utc(epoch: float) -> datetime:
    """A time of the owner's clock as the rows store it."""
    return datetime.fromtimestamp(epoch, tz=timezone.utc)


class Journal:
    def __init__(self, cache, clock, seq_base=0):
        self.clock = clock
        self.seq_base = seq_base          # sequence numbers continue across owners
        self.cause, self.actor, self.detail = "watch", "", ""
        self.assumptions = Assumptions()
        self.batch = Batch()
        self._events = []                 # (event, cause, actor, at, detail) since the last flush
        self._bind_seconds = []           # durations of the binds that went through since
        cache.subscribe(self._on_event)

    def stamp(self, cause: str, actor: str = "", detail: str = ""):
        """Who causes the changes that follow, and why: their events carry it."""
        self.cause, self.actor, self.detail = cause, actor, detail[:DETAIL_MAX]

    def _on_event(self, event):
        now = self.clock()
        self._events.append((event, self.cause, self.actor, now, self.detail))
        took = self.assumptions.note(event.kind, event.key, now)
        if took is not None:
            self._bind_seconds.append(took)

    def audit(self, row: dict):
        """An AuditAction row, written with the flush's other rows."""
        self.batch.audits.append(row)

    def note_leader(self, holder: str):
        """The handover, as the first event of this owner's history: numbered right after
        the previous owner's last, ahead of every cache event (their numbers move up one)."""
        self.seq_base += 1
        self._events.append((CacheEvent(0, OWNER_LEADING, holder, name=holder), "owner",
                             holder, self.clock(), ""))

    def take(self):
        """(stamped events, bind durations, batch) since the last take; the journal starts
        afresh."""
        taken = self._events, self._bind_seconds, self.batch
        self._events, self._bind_seconds, self.batch = [], [], Batch()
        return taken
