"""The versioned object store: etcd plus the apiserver's watch cache, in one lock.

Every object is kept as its serialized list-item JSON (no kind/apiVersion),
compressed (packing.py), so lists and watch events are written without
re-serializing; a small index (labels, selectable fields) serves selectors, a change
sharing what of it did not change with the state it replaced. One global
resourceVersion counter orders all writes. Each resource keeps its history of events
until a compaction drops it (by time, as kube-apiserver compacts etcd: see
compaction.py); an event remembers the state it replaced, so a LIST at an older
resourceVersion (continue tokens, resourceVersionMatch=Exact) is the current state
with newer events undone. History a compaction dropped answers 410.
"""

import heapq
import threading
from bisect import bisect_left, insort

from simcluster.gcpause import gc_paused
from simcluster.packing import pack, unpack


class Entry:
    """One stored object: its item bytes, compressed, and what selectors look at."""
    __slots__ = ("packed", "rv", "labels", "fields")

    def __init__(self, packed: bytes, rv: int, labels: dict, fields: dict):
        self.packed, self.rv, self.labels, self.fields = packed, rv, labels, fields

    @property
    def raw(self) -> bytes:
        """The item's JSON."""
        return unpack(self.packed)


class Event:
    """One change. `prev` is the replaced Entry (None on ADDED); `hidden` events
    (lost-event fault) count for snapshots but are never sent. The watch line is made
    when sent, not kept: history lives five to ten minutes (compaction.py), and a kept
    line would double what each of its events costs."""
    __slots__ = ("rv", "type", "key", "entry", "prev", "hidden", "resource")

    def __init__(self, rv, type_, key, entry, prev, hidden, resource):
        self.rv, self.type, self.key, self.entry = rv, type_, key, entry
        self.prev, self.hidden, self.resource = prev, hidden, resource

    @property
    def line(self) -> bytes:
        return b'{"type":"%s","object":%s}\n' % (self.type.encode(),
                                                  self.resource.full(self.entry.raw))


class Resource:
    """The objects of one kind, sorted keys, and the kind's event history."""

    def __init__(self, lock, name: str, kind: str, namespaced: bool, index):
        self.name, self.kind, self.namespaced = name, kind, namespaced
        self.index = index  # obj -> field index dict
        self.entries: dict = {}
        self.keys: list = []
        self.events: list = []
        self.first_seq = 0        # sequence number of events[0]
        self.compacted_rv = 0     # no events with rv <= this are kept
        self.cond = threading.Condition(lock)
        self.object_prefix = b'{"kind":"%s","apiVersion":"v1",' % kind.encode()

    @property
    def next_seq(self) -> int:
        return self.first_seq + len(self.events)

    def full(self, raw: bytes) -> bytes:
        """An item's bytes as a standalone object (GET, watch): kind and apiVersion first."""
        return self.object_prefix + raw[1:]

    def key_range(self, prefix: str, start: str = "") -> tuple:
        lo = bisect_left(self.keys, max(prefix, start))
        hi = bisect_left(self.keys, prefix[:-1] + "0") if prefix else len(self.keys)
        return lo, hi


def key_of(obj: dict, namespaced: bool) -> str:
    meta = obj["metadata"]
    return f"{meta['namespace']}/{meta['name']}" if namespaced else meta["name"]


class Store:
    """All resources; mutate only while holding `lock` (re-entrant, so a read-check-write
    sequence in resources.py is one atomic step)."""

    def __init__(self):
        self.lock = threading.RLock()
        self.rv = 0
        self.resources: dict[str, Resource] = {}
        self.lose_event = None  # fault hook: () -> True to keep a write's event from watchers

    def register(self, name: str, kind: str, namespaced: bool, index) -> Resource:
        res = Resource(self.lock, name, kind, namespaced, index)
        self.resources[name] = res
        return res

    def load(self, name: str, items: list) -> None:
        """Bulk-insert existing objects (with their resourceVersions) without events."""
        res = self.resources[name]
        with self.lock, gc_paused():
            for obj in items:
                item = _item(obj)
                rv = int(item["metadata"]["resourceVersion"])
                key = key_of(item, res.namespaced)
                res.entries[key] = Entry(pack(item), rv, item["metadata"].get("labels") or {},
                                         res.index(item))
                self.rv = max(self.rv, rv)
            res.keys = sorted(res.entries)
            for r in self.resources.values():
                if not r.events:  # nothing before now can be replayed
                    r.compacted_rv = self.rv

    # -- writes (caller holds the lock) ------------------------------------------------

    def next_rv(self) -> int:
        self.rv += 1
        return self.rv

    def put(self, name: str, obj: dict) -> Entry:
        """Create or replace `obj` with a new resourceVersion; ADDED or MODIFIED event."""
        res = self.resources[name]
        rv = self.next_rv()
        item = _item(obj)
        item["metadata"]["resourceVersion"] = str(rv)
        key = key_of(item, res.namespaced)
        labels, fields = item["metadata"].get("labels") or {}, res.index(item)
        prev = res.entries.get(key)
        if prev is not None:  # most changes leave labels or fields as they were
            labels = prev.labels if labels == prev.labels else labels
            fields = prev.fields if fields == prev.fields else fields
        entry = Entry(pack(item), rv, labels, fields)
        if prev is None:
            insort(res.keys, key)
        else:  # the stored key for the event: a copy in every event of history adds up
            key = res.keys[bisect_left(res.keys, key)]
        res.entries[key] = entry
        self._record(res, "ADDED" if prev is None else "MODIFIED", key, entry, prev)
        return entry

    def remove(self, name: str, obj: dict) -> Entry:
        """Delete; the DELETED event carries the last state with a new resourceVersion."""
        res = self.resources[name]
        rv = self.next_rv()
        item = _item(obj)
        item["metadata"]["resourceVersion"] = str(rv)
        key = key_of(item, res.namespaced)
        prev = res.entries.pop(key)
        key = res.keys.pop(bisect_left(res.keys, key))
        entry = Entry(pack(item), rv, prev.labels, prev.fields)
        self._record(res, "DELETED", key, entry, prev)
        return entry

    def _record(self, res: Resource, type_: str, key: str, entry: Entry, prev):
        hidden = self.lose_event is not None and self.lose_event()
        res.events.append(Event(entry.rv, type_, key, entry, prev, hidden, res))
        res.cond.notify_all()

    def compact(self, rv: int | None = None) -> int:
        """Forget the history up to `rv` (None: all of it, an etcd compaction reaching
        now); returns the rv compacted to. Lists and watches from versions before it
        answer 410."""
        with self.lock:
            rv = self.rv if rv is None else min(rv, self.rv)
            for res in self.resources.values():
                drop = bisect_left(res.events, rv + 1, key=lambda e: e.rv)
                del res.events[:drop]
                res.first_seq += drop
                res.compacted_rv = max(res.compacted_rv, rv)
                res.cond.notify_all()
            return rv

    def wake_all(self) -> None:
        with self.lock:
            for res in self.resources.values():
                res.cond.notify_all()

    # -- reads -------------------------------------------------------------------------

    def get(self, name: str, key: str) -> Entry | None:
        return self.resources[name].entries.get(key)

    def seq_after(self, res: Resource, rv: int) -> int | None:
        """The history position of the first event newer than `rv`; None if compacted."""
        if rv < res.compacted_rv:
            return None
        events = res.events
        return res.first_seq + bisect_left(events, rv + 1, key=lambda e: e.rv)

    def snapshot(self, name: str, rv: int | None = None, prefix: str = "", start: str = "",
                 count: int | None = None):
        """(rv, keys, entries, total): the state at `rv` (None: now), sorted by key, from
        `start` on and within `prefix`, at most `count` of the `total` there; None when `rv`
        is older than the history. Entries never change once stored, so callers filter and
        write them without the lock."""
        with self.lock:
            res = self.resources[name]
            lo, hi = res.key_range(prefix, start)
            entries = res.entries
            if rv is None or rv >= self.rv:
                keys = res.keys[lo:hi if count is None else min(hi, lo + count)]
                return self.rv, keys, [entries[k] for k in keys], hi - lo
            if rv < res.compacted_rv:
                return None
            undo = {}
            for ev in res.events[self.seq_after(res, rv) - res.first_seq:]:
                undo.setdefault(ev.key, ev.prev)  # the state at rv: what the first change replaced
            keys = res.keys[lo:hi]
            extra = sorted(k for k in undo if k not in entries and k.startswith(prefix)
                           and k >= start)
            if extra:
                keys = list(heapq.merge(keys, extra))
            out_keys, out = [], []
            for k in keys:
                e = undo[k] if k in undo else entries[k]
                if e is not None:
                    out_keys.append(k)
                    out.append(e)
            return rv, out_keys[:count], out[:count], len(out)


def _item(obj: dict) -> dict:
    """The list-item form of an object: kind and apiVersion left out."""
    if "kind" in obj or "apiVersion" in obj:
        return {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}
    return obj
