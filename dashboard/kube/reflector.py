"""Reflectors: one resource kind of a Kubernetes API server, listed and watched into a sink.

    stop = threading.Event()
    pods = Reflector(core_api, "pods", queue.put, stop=stop)
    pods.start()                  # a thread running pods.run()
    ...
    pods.stop()                   # or stop.set(): run() returns promptly either way

`run()` lists (paged, raw JSON through orjson; the client's model classes cost
about 1 ms a pod) and hands its sink one `Relisted`, then watches from the
list's resourceVersion and hands it one `Watched` per ADDED/MODIFIED/DELETED
event, forever (the sink: the owner's decoder process, the pools' feed, the
stand-in's view). With `watch_list` it lists through the watch instead, as
client-go's reflector does where the API server offers it (capture 58):
`sendInitialEvents=true&resourceVersionMatch=NotOlderThan` streams an ADDED per
object, gathered into pages as a list's, then a BOOKMARK annotated
`k8s.io/initial-events-end` ends the list (its version is the Relisted's) and
the same stream goes on as the watch; no list body is ever held, and no continue
token can expire. A server that refuses the request (an HTTP 4xx), or ignores it
(the server closes the stream at timeoutSeconds before the bookmark), is listed
the paged way from then on; a stream cut before the bookmark is listed again:

- BOOKMARK only advances `resource_version`;
- a watch answered with an ERROR event of code 410 (or an HTTP 410) relists
  and watches from the new version; an HTTP 410 on a continued list page
  (an expired continue token: the API server compacted the list's version,
  captures 99/99b) is answered as client-go's pager does (FullListIfExpired):
  one unpaged list at the latest version, consistent by construction, which
  replaces the pages already taken (with `stream_pages` it goes to the sink
  as a first page). Restarting the paged list instead never finishes when
  listing takes longer than the server keeps history;
- the server closing the stream at `timeoutSeconds` re-watches at once; a
  connection that fails, is reset, times out while connecting, or ends early,
  and any other ERROR, re-watch from the last version after a backoff with
  full jitter: `rand() * min(backoff[1], backoff[0] * 2**failures)`, where
  `failures` counts the failures (of lists and watches) since the last
  healthy watch (one that delivered at least one event or bookmark and did not
  end in an ERROR); a watch that gets 410 straight after its list backs off
  too, so a history shorter than a list never makes it relist in a loop;
- malformed lines, unknown event types and objects without an identity
  (`metadata.uid` for pods, `metadata.name` for nodes and claims) are counted in
  `stats` and logged at most once per `log_interval` seconds per kind of problem;
- a list or watch answered 403 (RBAC does not grant this account the kind: the
  owner's role may lack persistentvolumeclaims) sets `forbidden`, is logged once as
  an error naming the kind and the API server's words, and is asked again after the
  usual backoff (at most `backoff[1]` seconds apart), so a role granted later is
  followed without a restart; the first list that succeeds clears it (logged).

The watch stream is read chunk by chunk (lines split across chunks are joined)
and each line is parsed with orjson; `kubernetes.watch.Watch` is not used (its
model deserialisation is slow and it retries a 410 with the same stale version).

A silent watch (issue 22): an API server sends a BOOKMARK about every minute on
a watch with nothing to say (capture 55: the first at 61 s), so a watch that says
nothing at all, no event and no bookmark, for `silence` seconds (75 by default)
is stuck however open its connection looks. `silence` is the watch's read
timeout: past it the watch is dropped, logged once as a warning naming the kind
and the silence, and watched again at once from the last version.
`silent_for()` says how long ago the server last spoke (a list page, an event or
a bookmark), across watches, so a server that stays silent after the restart is
still seen as silent.

Stopping: a stop event (the caller's or our own) wakes every wait. While
`run()` is active a small watchdog thread waits on it and shuts the socket of
the request in flight, so a blocked read returns at once. Every request also
has a (connect, read) timeout; a list's read timeout is `read_timeout`, a
watch's is `silence`.

The owner alone touches the cache: the reflector only calls `sink` (from its
own thread), and an exception from `sink` ends `run()` (it is a bug, not a
network problem, and retrying would lose or reorder events).
"""

from __future__ import annotations

import functools
import http.client
import logging
import random
import re
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable

import orjson
import urllib3
from kubernetes.client.exceptions import ApiException

__all__ = ["ListPage", "Relisted", "Watched", "Reflector", "Stopped", "KINDS", "CLAIMS"]

KINDS = ("pods", "nodes")        # what the cache mirrors (the owner's comparer lists both)
# The claims kube-scheduler's VolumeBinding checks a pod's volumes against: the owner and
# the stand-in follow which exist (scheduling.diagnosis.missing_claim).
CLAIMS = "persistentvolumeclaims"
# The annotation on the bookmark that ends a watch-list's initial events (capture 58).
INITIAL_EVENTS_END = "k8s.io/initial-events-end"
_IDENTITY = {"pods": "uid", "nodes": "name", CLAIMS: "name"}
# kind -> the client's list call (also its watch: watch=true on the same path), written out
# so tests/deploy/test_rbac.py finds each call the owner's role must be granted.
_LIST_CALLS = {"pods": lambda api: api.list_pod_for_all_namespaces,
               "nodes": lambda api: api.list_node,
               CLAIMS: lambda api: api.list_persistent_volume_claim_for_all_namespaces}
FORBIDDEN = 403
_CHANGES = frozenset(("ADDED", "MODIFIED", "DELETED"))
# Failures of the transport: refused, reset, cut mid-chunk, timed out.
_TRANSPORT_ERRORS = (urllib3.exceptions.HTTPError, http.client.HTTPException, OSError)


@dataclass(frozen=True, slots=True)
class Relisted:
    """A fresh full list: the owner reconciles the cache with it."""
    kind: str                # "pods" | "nodes" | "persistentvolumeclaims"
    items: list              # list[dict], as the API server sent them (orjson-parsed)
    resource_version: str


@dataclass(frozen=True, slots=True)
class ListPage:
    """One page of a list in progress (only with `stream_pages`); `first` starts a list
    afresh (a restarted list sends its pages again). The Relisted that ends the list
    then has no items: they came in its pages."""
    kind: str
    items: list
    first: bool


@dataclass(frozen=True, slots=True)
class Watched:
    """One watch event."""
    kind: str
    type: str                # "ADDED" | "MODIFIED" | "DELETED"
    obj: dict
    resource_version: str


class Stopped(Exception):
    """list_once() was interrupted by the stop event."""


class _Throttled:
    """Log a problem at most once per `interval` seconds per key, counting the rest."""

    def __init__(self, log: logging.Logger, interval: float, clock):
        self.log, self.interval, self.clock = log, interval, clock
        self._last: dict = {}      # key -> (time logged, suppressed since)

    def warning(self, key: str, msg: str, *args) -> None:
        now = self.clock()
        last, suppressed = self._last.get(key, (None, 0))
        if last is not None and now - last < self.interval:
            self._last[key] = (last, suppressed + 1)
            return
        self._last[key] = (now, 0)
        if suppressed:
            msg += " (%d more like this suppressed)"
            args = (*args, suppressed)
        self.log.warning(msg, *args)


_CONTINUE = re.compile(rb'"continue":"([^"\\]+)"')


def _continue_in_head(body: bytes):
    """The continue token of a list body, read from before its items; None if not there."""
    end = body.find(b'"items"')
    found = _CONTINUE.search(body, 0, end) if end > 0 else None
    return found.group(1).decode() if found else None


def _ends_initial_events(meta) -> bool:
    """Whether a bookmark's metadata ends a watch-list's initial events (capture 58)."""
    annotations = meta.get("annotations") if type(meta) is dict else None
    return type(annotations) is dict and annotations.get(INITIAL_EVENTS_END) == "true"


class _InitialEvents:
    """The objects a watch-list streams before its bookmark, gathered as a paged list's
    pages: to the sink page by page with `stream_pages`, else into the Relisted."""

    def __init__(self, reflector: "Reflector"):
        self.reflector = reflector
        self.page: list = []
        self.items: list = []
        self.first = True

    def add(self, obj) -> None:
        self.page.append(obj)
        if len(self.page) == self.reflector.page_size:
            self._hand_over()

    def _hand_over(self) -> None:
        r = self.reflector
        if r.stream_pages:
            r.sink(ListPage(r.kind, self.page, first=self.first))
        else:
            self.items.extend(self.page)
        self.page, self.first = [], False

    def end(self, rv: str) -> None:
        """The bookmark came: the list ends at its version."""
        if self.page or self.first:    # a list of nothing still starts afresh
            self._hand_over()
        r = self.reflector
        r.stats["lists"] += 1
        r.stats["watch_lists"] += 1
        r._failures = 0
        r._allowed()
        r.sink(Relisted(r.kind, self.items, rv))


def _excerpt(line: bytes, limit: int = 120) -> bytes:
    return line if len(line) <= limit else line[:limit] + b"..."


class Reflector:
    """Lists then watches one kind (pods, nodes or persistentvolumeclaims) into `sink`; see
    the module doc.

    Arguments beyond the API client, kind and sink: `page_size` (list limit; 0
    lists in one request), `watch_timeout` (timeoutSeconds asked of the server),
    `backoff` (first and largest retry delay), `rand` (jitter draws in [0, 1)),
    `sleep` (how to wait a backoff; default: wait on the stop event), `stop` (an
    event shared with others, or a private one), `connect_timeout` and
    `read_timeout` (per socket operation; the read timeout is a list's only),
    `silence` (seconds a watch may say nothing before it is restarted: its read
    timeout), `clock` (monotonic seconds, for timeouts, silence and log
    throttling), `log_interval`.

    Readable from any thread: `resource_version` (the last version seen: list,
    event or bookmark), `state` ("new", "listing", "watching", "backing off",
    "stopped"), `last_watch_end` (what the last watch_once() returned) and
    `stats`, which counts lists, full_lists (unpaged lists after an expired
    continue token), watch_lists (lists streamed through the watch),
    watches, events, bookmarks, expired (410s that forced a relist), timeouts
    (watches the server closed at timeoutSeconds), silent (watches restarted after
    `silence` seconds without a word),
    errors (ERROR events other than 410, HTTP errors), reconnects (backoffs
    before a retry), malformed (unparseable lines, unknown types, missing
    fields) and skipped_no_uid (objects without metadata.uid, or without
    metadata.name for nodes and claims) and forbidden (403 answers). `forbidden`: the
    last list or watch was answered 403, and no list has succeeded since.
    `wait_for()` waits for a condition on them.
    `silent_for()`: seconds since the server last spoke.

    `digest` (optional) turns each object, listed or watched, into what the sink
    gets in `Relisted.items` and `Watched.obj` (the decoder process digests pods
    there); it must not raise. A list page's objects are digested as the page
    arrives, so a full list never holds every parsed object at once. With
    `stream_pages` each page goes to the sink as a `ListPage` as it arrives (the
    decoder's owner applies a page while the next one is parsed), list_once()
    included, and the Relisted that ends the list carries no items.

    `watch_list` lists through the watch (see the module doc); its pages hold
    `page_size` objects each (0: one page).
    """

    def __init__(self, api, kind: str, sink: Callable[[object], None], *,
                 page_size: int = 5000, watch_timeout: int = 300,
                 backoff: tuple = (0.2, 10.0), rand: Callable[[], float] = random.random,
                 sleep: Callable[[float], object] | None = None,
                 stop: threading.Event | None = None,
                 log: logging.Logger = logging.getLogger("schedview.feed.reflector"),
                 connect_timeout: float = 10.0, read_timeout: float = 90.0,
                 silence: float = 75.0,
                 clock: Callable[[], float] = time.monotonic, log_interval: float = 10.0,
                 label_selector: str = "", field_selector: str = "",
                 digest: Callable[[dict], object] | None = None,
                 stream_pages: bool = False, watch_list: bool = False):
        if kind not in _IDENTITY:
            raise ValueError(f"kind must be one of {tuple(_IDENTITY)}, not {kind!r}")
        self.api = api
        self.kind = kind
        self.sink = sink
        self.page_size = int(page_size)
        self.watch_timeout = int(watch_timeout)
        self.backoff = (float(backoff[0]), float(backoff[1]))
        self.rand = rand
        self._stop = stop if stop is not None else threading.Event()
        self._sleep = sleep if sleep is not None else self._stop.wait
        self.log = log
        self.clock = clock
        self.request_timeout = (float(connect_timeout), float(read_timeout))
        if not silence > 0:
            raise ValueError(f"silence must be a positive number of seconds, not {silence!r}")
        # Above the server's bookmark cadence (capture 55), so a merely quiet watch lives.
        self.silence = float(silence)
        self._watch_timeouts = (float(connect_timeout), self.silence)
        self._heard = None             # clock() when the server last spoke; None: not yet
        self.resource_version = ""
        self.stats = dict.fromkeys(
            ("lists", "full_lists", "watch_lists", "watches", "events", "bookmarks", "expired",
             "timeouts", "silent", "errors", "reconnects", "malformed", "skipped_no_uid",
             "forbidden"), 0)
        self.forbidden = False         # see _denied
        self.last_watch_end = ""       # why the last watch_once() ended
        self._id_field = _IDENTITY[kind]
        self._failures = 0             # since the last healthy watch
        self._session_lines = 0        # lines read by the last watch
        self._throttled = _Throttled(log, log_interval, clock)
        self._lock = threading.Lock()  # guards _inflight
        self._inflight = None          # the urllib3 response being read, if any
        self._relist_requested = False
        self._running = False
        self.state = "new"             # listing, watching, backing off, stopped
        self._changed = threading.Condition()
        self._list_call = _LIST_CALLS[kind](api)
        self.digest = digest
        self.stream_pages = stream_pages
        self.watch_list = watch_list   # until the server refuses it
        self._initial = None           # the watch-list's initial state, while it streams
        selectors = {name: value for name, value in (("label_selector", label_selector),
                                                     ("field_selector", field_selector)) if value}
        if selectors:   # lists and watches alike: only the objects they select
            self._list_call = functools.partial(self._list_call, **selectors)

    # -- control ---------------------------------------------------------------------

    def stop(self) -> None:
        """End run() promptly: set the stop event and cut the request in flight."""
        self._stop.set()
        self._abort_inflight()

    def request_relist(self) -> None:
        """Make run() relist soon (e.g. the owner found the cache and the cluster apart):
        the watch in flight is cut and a fresh Relisted is emitted."""
        self._relist_requested = True
        self._abort_inflight()

    def silent_for(self, now: float | None = None) -> float | None:
        """Seconds since the server last spoke (a list page, a watch event or bookmark),
        at `now` (clock() by default); None before run() started or the server first
        spoke. Any thread."""
        heard = self._heard
        if heard is None:
            return None
        return max(0.0, (self.clock() if now is None else now) - heard)

    def wait_for(self, predicate: Callable[["Reflector"], bool], timeout: float) -> bool:
        """Wait until predicate(self) holds; False if `timeout` seconds pass first.
        Re-checked whenever the state changes (a list or a watch starts or ends, a
        bookmark arrives, a backoff starts); events themselves reach only the sink.
        For example `wait_for(lambda r: r.stats["lists"] > 0, 30)`: synced."""
        with self._changed:
            return self._changed.wait_for(lambda: predicate(self), timeout)

    def _set_state(self, state: str | None = None) -> None:
        with self._changed:
            if state is not None:
                self.state = state
            self._changed.notify_all()

    def start(self, name: str | None = None) -> threading.Thread:
        """run() in a new daemon thread, which is returned."""
        thread = threading.Thread(target=self.run, name=name or f"reflector-{self.kind}",
                                  daemon=True)
        thread.start()
        return thread

    # -- the loop --------------------------------------------------------------------

    def run(self, resume: bool = False) -> None:
        """List, then watch, forever; returns once the stop event is set. `resume`
        watches from the `resource_version` already set first, listing only once that
        watch expires (a version of "0" replays every object as ADDED)."""
        self._running = True
        self._heard = self.clock()     # the silence is counted from the start
        watchdog = threading.Thread(target=self._watchdog, name=f"reflector-{self.kind}-stop",
                                    daemon=True)
        watchdog.start()
        try:
            self._loop(need_list=not (resume and self.resource_version))
        finally:
            self._running = False
            self._abort_inflight()
            self._set_state("stopped")

    def _loop(self, need_list: bool) -> None:
        stop = self._stop
        just_listed = False
        while not stop.is_set():
            if (need_list or self._relist_requested) and self.watch_list:
                self._relist_requested = False
                why = self.watch_once(listing=True)
                if why == "stopped":
                    return
                need_list = self._initial is not None    # the list did not end
                self._initial = None
                if need_list and why == "timeout":
                    # a server older than the watch-list ignores sendInitialEvents: its
                    # watch never says the initial events ended
                    self.watch_list = False
                    self.log.warning("%s: no end of the initial events before the watch's "
                                     "timeout; listing in pages instead", self.kind)
                elif need_list and why not in ("refused", "relist"):
                    self._back_off()
                if need_list:
                    continue
            elif need_list or self._relist_requested:
                self._relist_requested = False
                try:
                    relisted = self.list_once()
                except Stopped:
                    return
                except ApiException as e:
                    if e.status == FORBIDDEN:
                        self._denied(e, "list")
                    else:
                        self.stats["errors"] += 1
                        self._throttled.warning("list-http", "%s list failed: HTTP %s %s",
                                                self.kind, e.status, e.reason)
                    self._back_off()
                    continue
                except _TRANSPORT_ERRORS + (ValueError,) as e:
                    if stop.is_set():
                        return
                    self._throttled.warning("list-conn", "%s list failed: %r", self.kind, e)
                    self._back_off()
                    continue
                need_list = False
                just_listed = True
                self.sink(relisted)
                del relisted    # not held by this frame through the watch: a list of
                                # 20,000 whole nodes is 950 MB (issue 26)
                why = self.watch_once()
            else:
                why = self.watch_once()
            if why == "stopped":
                return
            if why in ("expired", "relist"):
                need_list = True
                if why == "expired" and just_listed and self._session_lines <= 1:
                    # the list's own version was already too old (history shorter than
                    # a list takes): relisting at once would spin, so back off first
                    self._back_off()
            elif why in ("disconnected", "error"):
                self._back_off()
            just_listed = False
            # "timeout", "silent": the server closed on time, or said nothing for too
            # long (logged in _watch): re-watch from the last version now

    def _back_off(self) -> None:
        base, cap = self.backoff
        delay = self.rand() * min(cap, base * 2 ** min(self._failures, 60))
        self._failures += 1
        self.stats["reconnects"] += 1
        self._set_state("backing off")
        if not self._stop.is_set():
            self._sleep(delay)

    def _watchdog(self) -> None:
        """Cut the request in flight as soon as the stop event is set (run() only)."""
        while self._running:
            if self._stop.wait(0.25):
                self._abort_inflight()
                return

    # -- in-flight requests ------------------------------------------------------------

    def _track(self, resp) -> None:
        with self._lock:
            self._inflight = resp

    def _untrack(self, resp) -> None:
        with self._lock:
            if self._inflight is resp:
                self._inflight = None

    def _abort_inflight(self) -> None:
        with self._lock:
            resp = self._inflight
            if resp is None:
                return
            try:
                resp.shutdown()  # urllib3 >= 2.3: wakes a read blocked in another thread
            except Exception:  # noqa: BLE001 - released or closed already: try the socket
                sock = getattr(getattr(resp, "connection", None), "sock", None)
                if sock is not None:
                    try:
                        sock.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass

    def _call(self, timeouts=None, **kwargs):
        return self._list_call(_preload_content=False,
                               _request_timeout=timeouts or self.request_timeout, **kwargs)

    @staticmethod
    def _discard(resp) -> None:
        """Close a response we may not have read to the end (its connection is dropped)."""
        try:
            resp.close()
            resp.release_conn()
        except Exception:  # noqa: BLE001 - closing a broken response may fail again
            pass

    # -- list ------------------------------------------------------------------------

    def list_once(self) -> Relisted:
        """One full list, paged; sets resource_version, returns it (does not call sink).

        An HTTP 410 on a continued page (an expired continue token) is followed by one
        unpaged list of everything; other HTTP errors raise ApiException, transport
        errors raise urllib3/OS errors, and the stop event raises Stopped."""
        self._set_state("listing")
        result = self._list_pages(self.page_size)
        if result is None:
            self.stats["full_lists"] += 1
            self._throttled.warning("list-410", "%s list: continue token expired (410); "
                                                "listing everything in one request", self.kind)
            result = self._list_pages(0)   # no continue token: cannot expire
        items, rv = result
        self.resource_version = rv
        self.stats["lists"] += 1
        self._allowed()
        self._set_state()
        return Relisted(self.kind, items, rv)

    def _fetch_page(self, token, limit: int):
        """One list page's body (the page after `token`, or the first; `limit` 0: all)."""
        if self._stop.is_set():
            raise Stopped()
        kwargs = {"limit": limit} if limit > 0 else {}
        if token:
            kwargs["_continue"] = token
        resp = self._call(**kwargs)
        self._track(resp)
        try:
            body = resp.read()
        except _TRANSPORT_ERRORS:
            self._untrack(resp)
            self._discard(resp)
            if self._stop.is_set():
                raise Stopped() from None
            raise
        self._untrack(resp)
        resp.release_conn()
        self._heard = self.clock()
        return body

    def _list_pages(self, limit: int):
        """(items, resourceVersion), or None when a continue token expired.

        The next page is asked for while this one is parsed (its continue token is read
        from the head of the body, where the API server writes the list's metadata), so
        the server's work on a page overlaps ours on the last; the token the parsed page
        holds is the one used, and a prefetch for another token is dropped."""
        with ThreadPoolExecutor(1, thread_name_prefix=f"reflector-{self.kind}-page") as ahead:
            return self._read_pages(ahead, limit)

    def _read_pages(self, ahead, limit: int):
        items: list = []
        rv = None
        token = None
        loads = orjson.loads
        prefetched = None   # (token, future of that page's body)
        while True:
            try:
                if prefetched is not None and prefetched[0] == token:
                    body = prefetched[1].result()
                else:
                    body = self._fetch_page(token, limit)
            except ApiException as e:
                if e.status == 410 and token:
                    return None
                raise
            prefetched = None
            next_token = _continue_in_head(body)
            if next_token:
                prefetched = (next_token, ahead.submit(self._fetch_page, next_token, limit))
            page = loads(body)
            del body
            meta = page.get("metadata") if type(page) is dict else None
            page_items = (page.get("items") or []) if type(meta) is dict else None
            if type(page_items) is not list or not meta.get("resourceVersion"):
                raise ValueError(f"{self.kind} list: not a list with a resourceVersion")
            if rv is None:
                rv = str(meta["resourceVersion"])
            if self.stream_pages:
                kept = []
                self._keep_identified(page_items, kept)
                del page, page_items
                self.sink(ListPage(self.kind, kept, first=not token))
            else:
                self._keep_identified(page_items, items)
            token = meta.get("continue")
            if not token:
                return items, rv

    def _keep_identified(self, page_items, out: list) -> None:
        id_field = self._id_field
        digest = self.digest
        for item in page_items:
            meta = item.get("metadata") if type(item) is dict else None
            if type(meta) is dict and meta.get(id_field):
                out.append(item if digest is None else digest(item))
            else:
                self.stats["skipped_no_uid"] += 1
                self._throttled.warning("no-id", "%s list: skipped an item without "
                                                 "metadata.%s", self.kind, id_field)

    # -- watch -----------------------------------------------------------------------

    def watch_once(self, listing: bool = False) -> str:
        """One watch from resource_version, emitting events until it ends; returns why:
        "timeout" (closed by the server at timeoutSeconds), "expired" (410: relist),
        "disconnected" (failed, reset, or ended early), "error" (an ERROR event or an
        HTTP error), "silent" (nothing for `silence` seconds), "relist"
        (request_relist()), "stopped".
        `listing`: a watch-list, which lists first (the sink gets pages and a Relisted)
        and leaves `_initial` set if the list did not end; "refused" if the server
        would not (the paged list is used from then on)."""
        if listing:
            self._initial = _InitialEvents(self)
            self._set_state("listing")
        why = self._watch(listing)
        self.last_watch_end = why
        self._set_state()
        return why

    def _watch(self, listing: bool) -> str:
        stop = self._stop
        if stop.is_set():
            return "stopped"
        self.stats["watches"] += 1
        self._session_lines = 0
        started = self.clock()
        where = ({"send_initial_events": True, "resource_version_match": "NotOlderThan"}
                 if listing else {"resource_version": self.resource_version})
        try:
            resp = self._call(self._watch_timeouts, watch=True, allow_watch_bookmarks=True,
                              timeout_seconds=self.watch_timeout, **where)
        except ApiException as e:
            if e.status == 410:
                self.stats["expired"] += 1
                return "expired"
            if e.status == FORBIDDEN:
                self._denied(e, "watch")
                return "error"
            if listing and 400 <= e.status < 500 and e.status != 429:
                self.watch_list = False
                self.log.warning("%s: the API server refused the watch-list (HTTP %s %s); "
                                 "listing in pages instead", self.kind, e.status, e.reason)
                return "refused"
            self.stats["errors"] += 1
            self._throttled.warning("watch-http", "%s watch failed: HTTP %s %s", self.kind,
                                    e.status, e.reason)
            return "error"
        except _TRANSPORT_ERRORS as e:
            if stop.is_set():
                return "stopped"
            self._throttled.warning("watch-conn", "%s watch could not start: %r", self.kind, e)
            return "disconnected"
        self._track(resp)
        if not listing:
            self._set_state("watching")
        why = "stopped"
        try:
            if not (stop.is_set() or self._relist_requested):
                why = self._read_stream(resp)
        except urllib3.exceptions.ReadTimeoutError:
            why = "silent"
        except _TRANSPORT_ERRORS as e:
            why = "disconnected"
            if not (stop.is_set() or self._relist_requested):
                self._throttled.warning("watch-cut", "%s watch cut: %r", self.kind, e)
        finally:
            self._untrack(resp)
            if why is None:  # read to the end: the connection can serve the next watch
                resp.release_conn()
            else:
                self._discard(resp)
        if stop.is_set():
            return "stopped"
        if self._relist_requested:
            return "relist"
        if why is None:  # the server ended the stream cleanly
            if self.clock() - started >= self.watch_timeout * 0.9:
                self.stats["timeouts"] += 1
                why = "timeout"
            else:
                why = "disconnected"
        if why == "silent":
            self.stats["silent"] += 1
            self.log.warning("%s watch said nothing (no event, no bookmark) for %g s: "
                             "dropped and started again (last resourceVersion %s)", self.kind,
                             self.silence, self.resource_version or "none")
        if self._session_lines and why not in ("error", "expired"):
            self._failures = 0  # a healthy session: the next failure backs off from the start
        return why

    def _chunks(self, resp):
        if resp.chunked and resp.supports_chunked_reads():
            return resp.read_chunked()
        read1 = resp.read1
        return iter(lambda: read1(65536), b"")

    def _read_stream(self, resp) -> str | None:
        """Read events until the stream ends (None), an ERROR ends it ("expired",
        "error"), or stop/relist is asked for ("stopped"). Sets _session_lines."""
        loads = orjson.loads
        decode_error = orjson.JSONDecodeError
        sink = self.sink
        digest = self.digest
        kind = self.kind
        id_field = self._id_field
        stats = self.stats
        stop_is_set = self._stop.is_set
        clock = self.clock
        changes = _CHANGES
        initial = self._initial     # a watch-list's initial state, until its bookmark
        seen = heard = 0      # lines read, and when the last of them was counted as spoken
        rest = b""
        try:
            for chunk in self._chunks(resp):
                if rest:
                    chunk = rest + chunk
                if chunk[-1:] == b"\n" and chunk.find(b"\n") == len(chunk) - 1:
                    lines = (chunk,)   # the usual case: one event per chunk
                    rest = b""
                else:
                    lines = chunk.split(b"\n")
                    rest = lines.pop()
                for line in lines:
                    if not line or line.isspace():
                        continue
                    seen += 1
                    try:
                        event = loads(line)
                        etype = event["type"]
                        obj = event["object"]
                        meta = obj["metadata"] if etype != "ERROR" else None
                        if etype.__class__ is not str:
                            raise TypeError(etype)
                    except (decode_error, KeyError, TypeError):
                        self._malformed("unparseable watch line: %r", _excerpt(line))
                        continue
                    if etype in changes:
                        try:
                            rv = meta["resourceVersion"]
                            ident = meta.get(id_field)
                            if rv.__class__ is not str:
                                raise TypeError(rv)
                        except (KeyError, TypeError, AttributeError):
                            self._malformed("event without a metadata.resourceVersion: %r",
                                            _excerpt(line))
                            continue
                        if not ident:
                            stats["skipped_no_uid"] += 1
                            self._throttled.warning("no-id", "%s watch: skipped a %s event "
                                                             "without metadata.%s",
                                                    kind, etype, id_field)
                            continue
                        if initial is not None:   # the list, not yet changes
                            if etype == "ADDED":
                                initial.add(obj if digest is None else digest(obj))
                            else:
                                self._malformed("%s before the initial events ended", etype)
                            continue
                        sink(Watched(kind, etype, obj if digest is None else digest(obj), rv))
                        self.resource_version = rv
                        stats["events"] += 1
                    elif etype == "BOOKMARK":
                        try:
                            rv = meta["resourceVersion"]
                            if rv.__class__ is not str:
                                raise TypeError(rv)
                        except (KeyError, TypeError):
                            self._malformed("bookmark without metadata.resourceVersion: %r",
                                            _excerpt(line))
                            continue
                        self.resource_version = rv
                        stats["bookmarks"] += 1
                        if initial is not None and _ends_initial_events(meta):
                            initial.end(rv)
                            initial = self._initial = None
                            self._set_state("watching")
                        else:
                            self._set_state()
                    elif etype == "ERROR":
                        return self._watch_error(obj)
                    else:
                        self._malformed("unknown watch event type %r", etype)
                if seen != heard:   # the server spoke (a chunk of blank lines is no word)
                    heard = seen
                    self._heard = clock()
                if stop_is_set() or self._relist_requested:
                    return "stopped"
        finally:
            self._session_lines = seen
        if rest.strip():
            self._malformed("watch stream ended inside a line: %r", _excerpt(rest))
        return None

    def _watch_error(self, status) -> str:
        code = status.get("code") if type(status) is dict else None
        if code == 410:
            self.stats["expired"] += 1
            self.log.info("%s watch from %s expired (%s); relisting", self.kind,
                          self.resource_version, status.get("message", ""))
            return "expired"
        self.stats["errors"] += 1
        self._throttled.warning("watch-error", "%s watch ERROR event: %r", self.kind, status)
        return "error"

    def _denied(self, exc: ApiException, verb: str) -> None:
        """A 403: RBAC does not let this account `verb` the kind. Said once, as an error,
        until a list succeeds: it lasts until someone changes the role, and a line every
        backoff would bury the rest of the log."""
        self.stats["forbidden"] += 1
        if self.forbidden:
            return
        self.forbidden = True
        try:
            said = orjson.loads(exc.body).get("message") or ""
        except (TypeError, ValueError, AttributeError):
            said = ""
        self.log.error("%s: the API server forbids this account to %s them (HTTP 403%s); "
                       "carrying on without them, asking again every %g s at most",
                       self.kind, verb, f": {said}" if said else "", self.backoff[1])

    def _allowed(self) -> None:
        """A list succeeded: a denial, if there was one, is over."""
        if self.forbidden:
            self.forbidden = False
            self.log.warning("%s: listed again after HTTP 403 answers: the role now "
                             "grants them", self.kind)

    def _malformed(self, msg: str, *args) -> None:
        self.stats["malformed"] += 1
        self._throttled.warning("malformed", "%s watch: " + msg, self.kind, *args)
