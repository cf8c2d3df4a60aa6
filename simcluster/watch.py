"""Watch streams: one JSON event per HTTP chunk, as the apiserver's watch cache sends them.

Behaviour from the captures: no resourceVersion (or "0") first sends a synthetic
ADDED per existing object; `sendInitialEvents=true` (the watch-list, capture 58) sends
the same ADDED events and then a BOOKMARK annotated `k8s.io/initial-events-end: "true"`
at the version they show; a compacted resourceVersion gets one ERROR event (Status
410 Expired) and the stream ends; BOOKMARKs (if allowed) every `bookmark_interval`
and once shortly before `timeoutSeconds`; the stream ends with the final chunk at
the timeout. With a selector, an object that starts matching arrives as ADDED and
one that stops matching as DELETED (the watch cache does the same).
"""

import threading
import time
from dataclasses import dataclass

import orjson

from simcluster.status import too_old_watch_status
from simcluster.store import Resource, Store

_BATCH = 1000
# The empty object the apiserver fills around a bookmark's resourceVersion.
_BOOKMARK_BODY = {
    "Pod": b'"spec":{"containers":null},"status":{}',
    "Node": (b'"spec":{},"status":{"daemonEndpoints":{"kubeletEndpoint":{"Port":0}},'
             b'"nodeInfo":{"machineID":"","systemUUID":"","bootID":"","kernelVersion":"",'
             b'"osImage":"","containerRuntimeVersion":"","kubeletVersion":"",'
             b'"kubeProxyVersion":"","operatingSystem":"","architecture":""}}'),
    "Namespace": b'"spec":{},"status":{}',
    "PersistentVolumeClaim": b'"spec":{},"status":{}',
}


@dataclass
class WatchRequest:
    resource: str
    prefix: str = ""              # "ns/" for a namespaced watch
    labels: object = None         # predicate over a labels dict, or None
    fields: object = None         # predicate over a field index, or None
    resource_version: int | None = None   # None or 0: start with synthetic ADDED
    bookmarks: bool = False
    timeout: float = 1800.0
    initial_events: bool = False  # sendInitialEvents: end the ADDED with a bookmark saying so


class Stream:
    """One open watch; `stop()` ends it (gracefully, or `abrupt`ly without the final chunk)."""

    def __init__(self):
        self.stopped = False
        self.abrupt = False

    def stop(self, abrupt: bool = False):
        self.abrupt = abrupt
        self.stopped = True


class Watchers:
    """The open streams, so a fault can drop them all at once."""

    def __init__(self, store: Store):
        self.store = store
        self.opened = 0  # streams ever opened: lets a test see a client come back
        self._streams: set = set()
        self._lock = threading.Lock()

    def open(self) -> Stream:
        s = Stream()
        with self._lock:
            self._streams.add(s)
            self.opened += 1
        return s

    def close(self, s: Stream):
        with self._lock:
            self._streams.discard(s)

    def count(self) -> int:
        with self._lock:
            return len(self._streams)

    def drop_all(self, abrupt: bool = False) -> int:
        with self._lock:
            streams = list(self._streams)
        for s in streams:
            s.stop(abrupt)
        self.store.wake_all()
        return len(streams)


def _retype(line: bytes, old: bytes, new: bytes) -> bytes:
    """The same event line under another type (b'{"type":"' is 9 bytes)."""
    return b'{"type":"' + new + line[9 + len(old):]


def _selected(req: WatchRequest, entry) -> bool:
    return ((req.labels is None or req.labels(entry.labels))
            and (req.fields is None or req.fields(entry.fields)))


def _event_line(req: WatchRequest, ev) -> bytes | None:
    """The line to send for `ev` on this watch, None if the watch does not see it."""
    if ev.hidden or not ev.key.startswith(req.prefix):
        return None
    if req.labels is None and req.fields is None:
        return ev.line
    now = _selected(req, ev.entry) if ev.type != "DELETED" else False
    before = ev.prev is not None and _selected(req, ev.prev)
    if ev.type == "DELETED":
        return ev.line if before else None
    if now and before:
        return ev.line
    if now:
        return ev.line if ev.type == "ADDED" else _retype(ev.line, b"MODIFIED", b"ADDED")
    if before:  # left the selection
        return _retype(ev.line, ev.type.encode(), b"DELETED")
    return None


def serve_watch(store: Store, watchers: Watchers, req: WatchRequest, send,
                bookmark_interval: float = 60.0, clock=time.monotonic) -> bool:
    """Stream events through `send(list_of_lines)` until the timeout or a stop.

    Returns False when the stream was dropped abruptly (the caller then closes the
    connection without the final chunk), True otherwise.
    """
    res = store.resources[req.resource]
    stream = watchers.open()
    try:
        return _run(store, res, stream, req, send, bookmark_interval, clock)
    finally:
        watchers.close(stream)


def _run(store, res: Resource, stream: Stream, req, send, bookmark_interval, clock) -> bool:
    start = clock()
    deadline = start + req.timeout
    last_bookmark = deadline - min(2.0, req.timeout / 10)  # "shortly before the timeout"
    periodic = start + bookmark_interval
    next_bookmark = min(periodic, last_bookmark)
    if not req.resource_version or req.initial_events:
        with store.lock:  # the snapshot and the history position must agree
            snapshot_rv, _, entries, _ = store.snapshot(req.resource, None, req.prefix)
            seq = res.next_seq
        for i in range(0, len(entries), _BATCH):   # a batch of lines at a time, not all
            added = [b'{"type":"ADDED","object":' + res.full(e.raw) + b"}\n"
                     for e in entries[i:i + _BATCH] if _selected(req, e)]
            if added:
                send(added)
        del entries
        if req.initial_events:
            send([b'{"type":"BOOKMARK","object":{"kind":"' + res.kind.encode()
                  + b'","apiVersion":"v1","metadata":{"resourceVersion":"%d","annotations":'
                    b'{"k8s.io/initial-events-end":"true"}},' % snapshot_rv
                  + _BOOKMARK_BODY.get(res.kind, b'"spec":{}') + b"}}\n"])
    else:
        with store.lock:
            seq = store.seq_after(res, req.resource_version)
            oldest = res.compacted_rv + 1
        if seq is None:
            status = too_old_watch_status(req.resource_version, oldest)
            send([b'{"type":"ERROR","object":' + orjson.dumps(status) + b"}\n"])
            return True
    bookmark = (b'{"type":"BOOKMARK","object":{"kind":"' + res.kind.encode()
                + b'","apiVersion":"v1","metadata":{"resourceVersion":"%d"},'
                + _BOOKMARK_BODY.get(res.kind, b'"spec":{}') + b"}}\n")
    while True:
        with store.lock:
            now = clock()
            while (res.next_seq == seq and not stream.stopped and now < deadline
                   and not (req.bookmarks and now >= next_bookmark)):
                wake = min(deadline, next_bookmark) if req.bookmarks else deadline
                res.cond.wait(wake - now)
                now = clock()
            if stream.stopped:
                return not stream.abrupt
            if seq < res.first_seq:
                return True  # fell behind the history: end; the client re-watches
            lo = seq - res.first_seq
            batch = res.events[lo:lo + _BATCH]
            seq += len(batch)
            caught_up_rv = store.rv if seq == res.next_seq else None
        lines = [line for line in (_event_line(req, ev) for ev in batch) if line]
        if req.bookmarks and caught_up_rv is not None and now >= next_bookmark:
            lines.append(bookmark % caught_up_rv)
            if now >= last_bookmark:
                next_bookmark = float("inf")
            else:
                while periodic <= now:
                    periodic += bookmark_interval
                next_bookmark = min(periodic, last_bookmark)
        if lines:
            send(lines)
        if now >= deadline:
            return True
