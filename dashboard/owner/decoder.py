"""The decoder process: the reflectors and the pods' digest run beside the owner, not in it.

Parsing a watch event and digesting its pod costs more than the owner spends
applying it, and in one process they would share one GIL. Here the
reflectors (HTTP, orjson, `make_pod_info`) run in a child process, which hands
the owner batches of compact records over a pipe (marshal: plain values only):

- a pod is `(pack_pod_info(info), kept annotations or None)`, or, when it cannot
  be digested, `(None, uid, resourceVersion, why)`; a node is its parsed dict; a
  PersistentVolumeClaim (with `kinds` naming them) is its (namespace, name) only;
- a message is `(views, received, entries, comparisons)`: every reflector's view,
  when its oldest entry came off the stream, the feed entries (up to BATCH_MAX: the
  child's sender ships what gathered in SHIP_PERIOD) marshalled on their own, and
  the comparer's lists, if any were taken;
- the owner's queue gets each message's entries as one `DecodedFeed`, still bytes:
  unpacked records are several times their bytes, and a first sync's backlog of them
  held most of the owner's memory (issue 26). The owner's thread unpacks them as it
  applies them into one `DecodedEvents` per run of watch events of one kind, one
  `DecodedPage` per list page (the owner applies a page while the child parses the
  next) and one `DecodedList` when a list is complete; a kind the API server starts
  refusing with 403 (RBAC) gets one `DecodedDenied`.

Everything the Reflector guarantees still holds (it runs unchanged in the child).
The owner reads each kind's `resource_version`, `state`, `stats` and
`silent_for()` (seconds since the API server last spoke) from a
`ReflectorView`, whose version only counts events already in the owner's
queue (a message's `DecodedFeed` is queued before its views are updated), so "the
watch passed the list's version" (runner.list_for_comparison) still means
"everything the list shows is queued". `request_relist()` is
forwarded. `reflectors` are the views of the kinds the cache mirrors (pods, nodes),
which the comparer waits on: the claims' view (`views[CLAIMS]`) has no part in that.

What a comparison found drifted is fetched again here (`DecoderProcess.repair`: a GET an
object, `_repair`), and handed over as `DecodedRepairs`, apart from the watch's events
(drift_repair.py says why not a relist).

The comparer's lists are taken here too (`list_for_comparison`): parsing every
pod of a large cluster in the owner's process would hold its GIL for seconds and
its memory at gigabytes, every minute. They come through the watch (watch-list) where
the API server offers it, else in pages. The child keeps of each listed object only
what schedcache.compare reads, each page marshalled as it comes (`ListedPages`), and
ships one `ComparisonLists`, which the reader thread hands to `list_for_comparison`
without going through the owner's queue.

Lifetime: the child's control pipe ends when the owner's process does (even on
SIGKILL), and the child then exits at once: no orphans. A child that dies is
noticed (its data pipe ends) and started again after a backoff; the new one
lists from scratch, so what the dead one had not handed over is not lost.
"""
from __future__ import annotations

import collections
import functools
import gc
import logging
import marshal
import multiprocessing
import multiprocessing.forkserver
import os
import queue
import random
import signal
import sys
import threading
import time
from dataclasses import dataclass
from typing import Callable

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from schedcache import CacheError
from schedcache.podinfo import make_pod_info, pack_pod_info

from dashboard.kube.claims import claim_key
from dashboard.kube.client import read_json
from dashboard.kube.reflector import CLAIMS, KINDS, ListPage, Reflector, Relisted, Watched
from dashboard.owner.listed_pages import ListedPages, pack
from dashboard.runtime.supervisor import die_with_parent

__all__ = ["ComparisonLists", "DecodedDenied", "DecodedEvents", "DecodedFeed", "DecodedList",
           "DecodedPage", "DecodedRepairs", "DecoderProcess",
           "ReflectorView", "comparable_node", "comparable_pod", "compared_pod", "digest_pod"]

log = logging.getLogger(__name__)

BATCH_MAX = 250         # events per message: the owner applies a batch in one go (~4 ms)
STATUS_PERIOD = 0.5     # seconds: states and bookmarks reach the owner at least this often
COLLECT_PERIOD = 60.0   # seconds between the child's garbage collections (see _child_main)
# Objects a page of the comparer's lists holds, client-go's pager's default: a page is
# parsed whole before it is cut down, and a page of 5,000 pods left the decoder 300 MB
# larger after every comparison at 50,000 pods
COMPARISON_PAGE = 500
REPAIR_TIMEOUT = (5.0, 10.0)   # seconds to connect and to read one GET of a repair
SHIP_PERIOD = 0.002     # seconds between messages (unless BATCH_MAX are waiting): a message
                        # a event would cost the owner more than applying it
_LISTING = ("new", "listing")


@dataclass(frozen=True, slots=True)
class DecodedEvents:
    """Watch events of one kind, in order: (type, record) pairs."""
    kind: str
    events: list
    received: float | None = None   # when the oldest came off the stream (feed_lag.py)


@dataclass(frozen=True, slots=True)
class DecodedPage:
    """A page of a list in progress, as records; `first` starts the list afresh."""
    kind: str
    items: list
    first: bool
    received: float | None = None   # when it came off the stream (feed_lag.py)


@dataclass(frozen=True, slots=True)
class DecodedList:
    """The list whose pages came before is complete (at resource_version)."""
    kind: str
    resource_version: str


@dataclass(frozen=True, slots=True)
class DecodedRepairs:
    """Objects a comparison found drifted, as the API server has them now (one GET each):
    (type, record) pairs as watch events are, MODIFIED or DELETED (gone from the
    cluster). Not the watch's: they move no reflector's version, and the owner applies one
    only over an older version than it holds."""
    kind: str
    events: list


@dataclass(frozen=True, slots=True)
class Repaired:
    """One object of a repair, in the child's outbox."""
    kind: str
    type: str
    obj: object


@dataclass(frozen=True, slots=True)
class DecodedFeed:
    """One message's feed entries, marshalled (see the module doc): unpack() as applied."""
    entries: bytes
    received: float | None = None   # when the oldest came off the stream (feed_lag.py)

    def unpack(self):
        """The entries as DecodedEvents (consecutive watch events of one kind),
        DecodedRepairs (the same, of a repair), DecodedPage and DecodedList items, in order;
        events and pages carry the `received` stamp."""
        batch_key, batch = None, []
        for entry in marshal.loads(self.entries):
            if entry[0] in "WR":
                tag, kind, etype, record = entry
                if (tag, kind) != batch_key and batch:
                    yield self._batch(batch_key, batch)
                    batch = []
                batch_key = (tag, kind)
                batch.append((etype, record))
                continue
            if batch:
                yield self._batch(batch_key, batch)
                batch_key, batch = None, []
            if entry[0] == "P":
                yield DecodedPage(*entry[1:], received=self.received)
            else:
                yield DecodedList(*entry[1:])
        if batch:
            yield self._batch(batch_key, batch)

    def _batch(self, key, events):
        tag, kind = key
        if tag == "R":
            return DecodedRepairs(kind, events)
        return DecodedEvents(kind, events, self.received)


@dataclass(frozen=True, slots=True)
class DecodedDenied:
    """The API server answers this kind's list or watch 403 (RBAC): what the owner kept of
    it can no longer be followed (it is listed again once allowed)."""
    kind: str


@dataclass(frozen=True, slots=True)
class ComparisonLists:
    """Nodes and pods listed for the comparer, cut to what it reads, in marshalled pages;
    or why not (`error`)."""
    nodes: ListedPages | None
    pods: ListedPages | None
    resource_version: str
    error: str = ""


def comparable_pod(obj: dict) -> tuple:
    """What schedcache.compare reads of a pod and what a repair fetches it by, as one tuple
    (uid, version, node, phase, namespace, name): as four small dicts a pod, the comparer's
    lists held the owner 1.4 kB a pod at each comparison (issue 26)."""
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    return (meta.get("uid"), meta.get("resourceVersion"), _interned(spec.get("nodeName")),
            _interned(status.get("phase")), _interned(meta.get("namespace")), meta.get("name"))


def _interned(text):
    """Shared by every pod naming it, here and where marshal hands it over."""
    return sys.intern(text) if type(text) is str else text


def compared_pod(listed: tuple) -> dict:
    """A comparable_pod as the Mapping schedcache.compare reads: made one at a time, as the
    comparison goes."""
    uid, version, node, phase = listed[:4]
    return {"metadata": {"uid": uid, "resourceVersion": version}, "spec": {"nodeName": node},
            "status": {"phase": phase}}


def comparable_node(obj: dict) -> dict:
    """The part of a node schedcache.compare reads: name, version, allocatable."""
    meta = obj.get("metadata") or {}
    return {"metadata": {"name": meta.get("name"), "resourceVersion": meta.get("resourceVersion")},
            "status": {"allocatable": (obj.get("status") or {}).get("allocatable")}}


def digest_pod(obj: dict, keep_annotations=()) -> tuple:
    """A pod's record (see the module doc); never raises."""
    try:
        info = make_pod_info(obj)
    except CacheError as exc:
        meta = obj.get("metadata") or {}
        return (None, meta.get("uid") or "", meta.get("resourceVersion") or "", str(exc))
    annotations = obj["metadata"].get("annotations")
    kept = None
    if annotations and keep_annotations:
        kept = {k: annotations[k] for k in keep_annotations if k in annotations} or None
    return (pack_pod_info(info), kept)


# --- the child ----------------------------------------------------------------------------------

class _Outbox:
    """What the reflector threads saw, until the sender ships it."""

    def __init__(self):
        self.items = collections.deque()
        self.ready = threading.Event()

    def sink(self, item) -> None:
        self.items.append((time.time(), item))   # stamped: the owner measures its lag
        if not self.ready.is_set():   # set() takes a lock: once per batch is enough
            self.ready.set()


def _encode(item, delivered: dict) -> tuple:
    if type(item) is ListPage:
        return ("P", item.kind, item.items, item.first)
    if type(item) is Repaired:
        return ("R", item.kind, item.type, item.obj)
    delivered[item.kind] = item.resource_version
    if type(item) is Watched:
        return ("W", item.kind, item.type, item.obj)
    return ("L", item.kind, item.resource_version)


def _ship(conn, outbox: _Outbox, reflectors: dict, delivered: dict) -> None:
    """One message (see the module doc): every reflector's view and the items queued so far
    (BATCH_MAX at most).

    A view's version is read before the items are taken, and reported only when every
    item queued by then is in this message, so the owner never hears of a version
    whose events it has not been handed. While listing, the reflector sets the list's
    version before handing the list over: the last delivered version is reported."""
    seen = {}
    for kind, r in reflectors.items():
        state = r.state
        seen[kind] = (state, r.resource_version)
    queued = len(outbox.items)
    entries, comparisons, received = [], [], None
    while outbox.items and len(entries) + len(comparisons) < BATCH_MAX:
        stamp, item = outbox.items.popleft()
        if type(item) is ComparisonLists:
            comparisons.append((*(None if lists is None else lists.packed()
                                  for lists in (item.nodes, item.pods)),
                                item.resource_version, item.error))
            continue
        received = received or stamp
        entries.append(_encode(item, delivered))
    views = {}
    for kind, r in reflectors.items():
        state, version = seen[kind]
        if state in _LISTING or len(entries) + len(comparisons) < queued:
            version = delivered.get(kind, "")
        views[kind] = (state, version, dict(r.stats), r.last_watch_end, r.silent_for(),
                       r.forbidden)
    conn.send_bytes(marshal.dumps((views, received, marshal.dumps(entries) if entries else b"",
                                   comparisons)))


def _list_for_comparison(api_factory, sink, watch_list: bool) -> None:
    """Both lists, cut down as they are read (a page at a time is whole), then shipped."""
    try:
        nodes, nodes_at = _comparison_list(api_factory(), "nodes", comparable_node, watch_list)
        pods, pods_at = _comparison_list(api_factory(), "pods", comparable_pod, watch_list)
        listed_at = max(nodes_at, pods_at, key=lambda version: int(version or 0))
        sink(ComparisonLists(nodes, pods, listed_at))
    except Exception as exc:      # the owner is waiting: tell it why, whatever went wrong
        sink(ComparisonLists(None, None, "", f"{type(exc).__name__}: {exc}"))


def _comparison_list(api, kind: str, digest, watch_list: bool) -> tuple:
    """One kind as the comparer reads it, (ListedPages, its version): through the watch
    where the API server offers it (capture 58: every object as it stands at the closing
    bookmark's version, one at a time, with no continue token to expire), else in pages.
    At 600,000 pods under churn the paged list outlived its continue token, and the
    one-request list that follows an expired token was too large to parse. Each page is
    marshalled as it comes (listed_pages.py says why)."""
    pages, ended = [], []

    def taken(item):
        if type(item) is ListPage:
            if item.first:          # a list started again sends its pages again
                pages.clear()
            pages.append((pack(item.items), len(item.items)))
        elif type(item) is Relisted:
            ended.append(item.resource_version)
            reflector.stop()       # the watch that would follow is not the comparer's

    reflector = Reflector(api, kind, taken, digest=digest, page_size=COMPARISON_PAGE,
                          watch_list=watch_list, stream_pages=True)
    if watch_list:
        why = reflector.watch_once(listing=True)
        if not ended and reflector.watch_list:   # offered, but the stream ended first
            raise RuntimeError(f"the {kind} watch-list ended before its initial events "
                               f"did ({why})")
    if not ended:
        ended.append(reflector.list_once().resource_version)
    listed = ListedPages(tuple(page for page, _ in pages), sum(n for _, n in pages))
    return listed, ended[0]


def _fetch(api, kind: str, key):
    """The object as the API server has it now (a GET: captures 21, 11), None when it is
    gone (404: capture 60). `key`: a pod's (namespace, name, uid), a node's name."""
    try:
        if kind == "pods":
            namespace, name, _ = key
            response = api.read_namespaced_pod(name, namespace, _preload_content=False,
                                               _request_timeout=REPAIR_TIMEOUT)
        else:
            response = api.read_node(key, _preload_content=False,
                                     _request_timeout=REPAIR_TIMEOUT)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return read_json(response)


def repaired(kind: str, key, obj, digest) -> list:
    """What a repair hands over for one fetched object: (type, record) pairs, a pod's
    record made by `digest`, a node's the node itself. A pod that is gone, or whose name
    another pod (another uid) now has, is DELETED: a uid never comes back."""
    if kind == "pods":
        _, _, uid = key
        found = [] if obj is None else [("MODIFIED", digest(obj))]
        if obj is None or (obj.get("metadata") or {}).get("uid") != uid:
            found.insert(0, ("DELETED", (None, uid, "", "gone from the cluster")))
        return found
    return [("DELETED", {"metadata": {"name": key}}) if obj is None else ("MODIFIED", obj)]


def _repair(api_factory, kind: str, keys: list, sink, digest) -> None:
    """Fetch each drifted object again (one at a time: a repair is a few hundred objects
    where a relist is every one) and hand them over; one that fails stays drifted, for the
    next comparison to find."""
    api, failed, why = api_factory(), 0, ""
    for key in keys:
        try:
            obj = _fetch(api, kind, key)
        except (ApiException, HTTPError, OSError, ValueError) as exc:
            failed, why = failed + 1, f"{type(exc).__name__}: {exc}"[:200]
            continue
        for etype, record in repaired(kind, key, obj, digest):
            sink(Repaired(kind, etype, record))
    log.info("repaired %d %s the comparer found drifted%s", len(keys) - failed, kind,
             f"; {failed} could not be fetched ({why})" if failed else "")


def _follow_control(conn, reflectors: dict, stop: threading.Event, api_factory,
                    outbox: "_Outbox", watch_list: bool) -> None:
    """Relist, repair and comparison requests and stop from the owner; the owner gone
    (EOF) stops us too."""
    try:
        while True:
            op, kind, *keys = conn.recv()
            if op == "relist":
                reflectors[kind].request_relist()
            elif op == "repair":
                threading.Thread(target=_repair,
                                 args=(api_factory, kind, keys[0], outbox.sink,
                                       reflectors[kind].digest),
                                 name=f"decoder-repair-{kind}", daemon=True).start()
            elif op == "compare":
                threading.Thread(target=_list_for_comparison,
                                 args=(api_factory, outbox.sink, watch_list),
                                 name="decoder-comparison", daemon=True).start()
            else:
                break
    except (EOFError, OSError):
        pass
    stop.set()
    for r in reflectors.values():
        r.stop()


def _child_main(data_conn, control_conn, api_factory, kinds, keep_annotations, resume_from,
                options) -> None:
    """The decoder process: reflectors in threads, this thread ships what they saw.

    Parsed JSON is a tree and records are tuples: nothing here makes cycles worth the
    collector's passes, which would walk every object of a list page in flight (most of
    a listed pod's CPU again), so it collects only once a COLLECT_PERIOD, for whatever
    cycles the HTTP client's errors leave."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is the owner's to handle
    # Forked by the fork server, which ends when the owner does (even SIGKILLed): the
    # decoder ends with it.
    die_with_parent(os.getppid())
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s decoder %(levelname)s %(name)s: %(message)s")
    gc.disable()
    stop = threading.Event()
    outbox = _Outbox()
    reflectors = {}
    for kind in kinds:
        digest = (functools.partial(digest_pod, keep_annotations=keep_annotations)
                  if kind == "pods" else claim_key if kind == CLAIMS else None)
        reflectors[kind] = r = Reflector(api_factory(), kind, outbox.sink, stop=stop,
                                         digest=digest, stream_pages=True, **options)
        r.resource_version = resume_from.get(kind, "")
    threads = [threading.Thread(target=r.run, kwargs={"resume": bool(r.resource_version)},
                                name=f"reflector-{kind}", daemon=True)
               for kind, r in reflectors.items()]
    threading.Thread(target=_follow_control,
                     args=(control_conn, reflectors, stop, api_factory, outbox,
                           options.get("watch_list", False)),
                     name="decoder-control", daemon=True).start()
    for thread in threads:
        thread.start()
    delivered = {}
    collected = time.monotonic()
    try:
        while not stop.is_set():
            if time.monotonic() - collected > COLLECT_PERIOD:
                gc.collect()
                collected = time.monotonic()
            outbox.ready.wait(STATUS_PERIOD)
            if len(outbox.items) < BATCH_MAX:
                stop.wait(SHIP_PERIOD)     # let a batch gather
            outbox.ready.clear()
            _ship(data_conn, outbox, reflectors, delivered)
            if outbox.items:      # more than BATCH_MAX were waiting
                outbox.ready.set()
            if not all(t.is_alive() for t in threads) and not stop.is_set():
                log.error("a reflector of the decoder process ended; exiting so the owner "
                          "starts a fresh one")
                os._exit(3)
    except (BrokenPipeError, EOFError, OSError):
        pass          # the owner is gone
    os._exit(0)       # the reflector threads may be blocked in a read: do not wait for them


# --- the owner's side ---------------------------------------------------------------------------

class ReflectorView:
    """One kind's reflector as the owner sees it: what Reflector offers readers, from the
    decoder's messages, and request_relist() forwarded. `clock`: monotonic seconds."""

    def __init__(self, kind: str, process: "DecoderProcess", clock=time.monotonic):
        self.kind = kind
        self.resource_version = ""
        self.state = "new"
        self.stats: dict = {}
        self.last_watch_end = ""
        self.forbidden = False      # the reflector's: its kind answered 403
        self.clock = clock
        # When the API server last spoke, on our clock: a silence keeps growing here when
        # the decoder's messages stop too (a stuck or restarting decoder hears nothing).
        self._heard_at = None
        self._process = process
        self._changed = threading.Condition()

    def silent_for(self, now: float | None = None) -> float | None:
        """Seconds since the API server last spoke to this kind's reflector (Reflector's
        silent_for), at `now` (clock() by default); None until the decoder said."""
        if self._heard_at is None:
            return None
        return max(0.0, (self.clock() if now is None else now) - self._heard_at)

    def request_relist(self) -> None:
        self._process._control(("relist", self.kind))

    def wait_for(self, predicate: Callable[["ReflectorView"], bool], timeout: float) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: predicate(self), timeout)

    def _update(self, state, version, stats, last_watch_end, silent=None,
                forbidden=False) -> bool:
        """`silent`: the reflector's silent_for() as it shipped; None keeps the last.
        Returns whether the kind has just been forbidden."""
        with self._changed:
            self.state, self.resource_version = state, version
            self.stats, self.last_watch_end = stats, last_watch_end
            if silent is not None:
                self._heard_at = self.clock() - silent
            denied, self.forbidden = forbidden and not self.forbidden, forbidden
            self._changed.notify_all()
        return denied


def warm_up() -> None:
    """Start the fork server that decoders are forked from, its imports done, so that a
    decoder starts at once when asked: a standby owner calls this while it waits for the
    lease, and at takeover its decoder lists seconds sooner than a fresh interpreter
    would (no copy of the owner's heap or threads either way)."""
    multiprocessing.set_forkserver_preload([__name__, "dashboard.kube.client"])
    multiprocessing.forkserver.ensure_running()


class DecoderProcess:
    """Runs the reflectors of `kinds` in a child process and puts what they saw to `put`.

    `api_factory` (picklable: a module-level function or a partial of one) builds the
    Kubernetes client in the child; `keep_annotations` names the pod annotations the
    records keep (the rest of a pod is digested); `options` go to each Reflector;
    `resume_from` (kind -> resourceVersion) makes the first child watch from there
    instead of listing. `restart_backoff` (first, largest) spaces the restarts of a
    child that keeps dying; `restarts` counts them."""

    def __init__(self, put: Callable[[object], object], api_factory: Callable, *,
                 kinds=KINDS, keep_annotations=(), options: dict | None = None,
                 resume_from: dict | None = None, restart_backoff=(0.5, 30.0),
                 stop: threading.Event | None = None, rand=random.random):
        self.put = put
        self.api_factory = api_factory
        self.kinds = tuple(kinds)
        self.keep_annotations = tuple(keep_annotations)
        self.options = dict(options or {})
        self.restart_backoff = restart_backoff
        self.rand = rand
        self.views = {kind: ReflectorView(kind, self) for kind in self.kinds}
        self.restarts = 0
        self.process = None
        self._resume_from = dict(resume_from or {})
        self._stop = stop if stop is not None else threading.Event()
        self._control_lock = threading.Lock()
        self._control_conn = None
        self._data_conn = None
        self._reader = None
        self._comparisons = queue.Queue()

    @property
    def reflectors(self) -> list:
        """The views of the kinds the cache mirrors (see the module doc)."""
        return [view for kind, view in self.views.items() if kind in KINDS]

    def start(self) -> "DecoderProcess":
        self._spawn()
        self._reader = threading.Thread(target=self._read, name="decoder-reader", daemon=True)
        self._reader.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the child (asked, then terminated, then killed) and the reader thread;
        setting the `stop` event passed in does the same from the reader thread."""
        self._stop.set()
        self._control(("stop", ""))
        self._end_child(timeout)
        if self._reader is not None and self._reader is not threading.current_thread():
            self._reader.join(timeout)

    def repair(self, kind: str, keys: list) -> None:
        """The child fetches these objects again (see `_repair`); they come back on the
        feed as DecodedRepairs."""
        self._control(("repair", kind, list(keys)))

    def list_for_comparison(self, timeout: float) -> ComparisonLists:
        """The child lists nodes and pods for the comparer (cut down); TimeoutError when
        no lists came in `timeout` (the child died, or the cluster is slow), RuntimeError
        when listing failed."""
        while not self._comparisons.empty():    # an answer to a request that timed out
            self._comparisons.get_nowait()
        self._control(("compare", ""))
        try:
            lists = self._comparisons.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"the decoder process listed nothing for the comparer in "
                               f"{timeout:.0f} s") from None
        if lists.error:
            raise RuntimeError(lists.error)
        return lists

    def _spawn(self) -> None:
        context = multiprocessing.get_context("forkserver")   # no copy of the owner's heap or threads
        data_recv, data_send = context.Pipe(duplex=False)
        control_recv, control_send = context.Pipe(duplex=False)
        resume_from, self._resume_from = self._resume_from, {}
        process = context.Process(
            target=_child_main, name="schedview-decoder", daemon=True,
            args=(data_send, control_recv, self.api_factory, self.kinds, self.keep_annotations,
                  resume_from, self.options))
        process.start()
        # Only the child holds these ends now: its death ends our reads, ours ends its.
        data_send.close()
        control_recv.close()
        with self._control_lock:
            self._control_conn = control_send
        self._data_conn = data_recv
        self.process = process

    def _control(self, message) -> None:
        with self._control_lock:
            if self._control_conn is None:
                return
            try:
                self._control_conn.send(message)
            except (BrokenPipeError, OSError):
                pass     # the child is gone; the reader restarts it

    def _end_child(self, timeout: float) -> None:
        process = self.process
        if process is None:
            return
        process.join(timeout)
        if process.is_alive():
            process.terminate()
            process.join(timeout)
        if process.is_alive():
            process.kill()
            process.join()
        with self._control_lock:
            if self._control_conn is not None:
                self._control_conn.close()
                self._control_conn = None

    def _read(self) -> None:
        failures = 0
        while not self._stop.is_set():
            try:
                payload = self._data_conn.recv_bytes()
            except (EOFError, OSError):
                if self._stop.is_set():
                    break
                self._end_child(1.0)
                base, cap = self.restart_backoff
                delay = self.rand() * min(cap, base * 2 ** min(failures, 30))
                failures += 1
                self.restarts += 1
                log.error("the decoder process died (exit code %s); starting another in "
                          "%.1f s, which lists afresh", self.process.exitcode, delay)
                for view in self.views.values():
                    view._update("new", "", {}, "")
                if self._stop.wait(delay):
                    break
                self._data_conn.close()
                self._spawn()
                continue
            views, received, entries, comparisons = marshal.loads(payload)
            if entries or comparisons:
                failures = 0
            if entries:
                self.put(DecodedFeed(entries, received))
            for nodes, pods, listed_at, error in comparisons:
                self._comparisons.put(ComparisonLists(
                    *(None if packed is None else ListedPages(*packed) for packed in (nodes, pods)),
                    listed_at, error))
            for kind, view in views.items():
                if self.views[kind]._update(*view):
                    self.put(DecodedDenied(kind))
        # stopped (the child ships its views every STATUS_PERIOD, so this is seen soon)
        self._control(("stop", ""))
        self._end_child(5.0)
        self._data_conn.close()
