"""The cache owner: the one process that writes the cache.

It applies what the reflectors saw (watch events and fresh lists), the
commands other processes send (assume, finish binding, forget, expire, reap,
compare), and hands every transition on: to the database (read model and
history, in batches) and to the browsers (one channel-layer message a flush).
Everything runs in one thread in small steps that report whether they found
work, so tests drive it step by step.
"""
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime, timezone
import functools
import logging
import queue
import threading
import time

import orjson

from schedcache import Cache, CacheCorruptedError, CacheError, Snapshot, compare
from schedcache.events import CacheEvent
from schedcache.podinfo import make_pod_info, unpack_pod_info

from dashboard.feed.commands import CommandServer
from dashboard.feed.decoder import DecodedEvents, DecodedList, DecodedPage
from dashboard.feed.feed_lag import FeedLag
from dashboard.feed.owner_metrics import OwnerMetrics
from dashboard.feed.projection import Batch
from dashboard.feed.reflector import Relisted, Watched
from dashboard.feed.row_details import node_details, pod_request_columns
from dashboard.redis_outage import RedisBackoff
from wire.commands import CommandError
from wire.keys import OWNER_SEQ as SEQ_KEY
from wire.keys import OWNER_STATUS as STATUS_KEY, OWNER_STATUS_TTL as STATUS_TTL
from wire.live import OWNER_LEADING

log = logging.getLogger(__name__)

ROWS_PER_FLUSH = 3000                    # read-model rows built per flush (100 ms)
_TERMINATED = ("Succeeded", "Failed")
_OUTCOMES = {"pod_expired": "Expired", "pod_forgotten": "Forgotten"}
_LEAVE_ASSUMED = frozenset(("pod_added", "pod_confirmed", "pod_forgotten", "pod_expired",
                            "pod_removed"))
BIND_DEADLINE_CAUSE = "bind deadline"
_COMMAND_CAUSES = {"bind": "bind", "reaper": "reaper", "comparer": "owner", "system": "owner"}


def _uid(obj):
    return (obj.get("metadata") or {}).get("uid") or ""


def _name(obj):
    return (obj.get("metadata") or {}).get("name") or ""


def _rv(obj):
    return (obj.get("metadata") or {}).get("resourceVersion") or ""


def _record_uid(record):
    """The uid of a decoder's pod record (see dashboard/feed/decoder.py)."""
    return record[0][0] if record[0] is not None else record[1]


def _lean_pod(info, annotations):
    """A digested pod as a Mapping, with the annotations its record kept."""
    pod = info.pod
    if annotations:
        pod["metadata"]["annotations"] = annotations
    return pod


def _ref(uid, node=""):
    """The smallest pod Mapping the cache accepts to name a pod it holds."""
    return {"metadata": {"uid": uid}, "spec": {"nodeName": node}}


def zone_display(key: str) -> str:
    """A NodeTree zone key ("region:\\x00:zone") as people write it ("region/zone")."""
    region, _, zone = (key or "").partition(":\x00:")
    return f"{region}/{zone}" if region else zone


def _iso(epoch):
    return datetime.fromtimestamp(epoch, tz=timezone.utc)


def _version(rv):
    """A resourceVersion as a number, for "newer than"; None where it is not one."""
    try:
        return int(rv)
    except (TypeError, ValueError):
        return None


def newer(rv, than) -> bool:
    a, b = _version(rv), _version(than)
    return a is not None and b is not None and a > b


@dataclass
class CompareRequest:
    """Lists taken for a comparison, to be compared once the feed has caught up with them."""
    nodes: list
    pods: list
    resource_version: str
    watch_behind: bool = False    # compared without the watch passing the lists' version


@dataclass
class CompareFailed:
    """A comparison that could not be made: recorded, so the pages show the failure."""
    error: str


class CacheOwner:
    def __init__(self, cache: Cache, *, command_server: CommandServer = None, writer=None,
                 publisher=None, redis=None, seq_base=0, epoch=0, lister=None, on_drift=None,
                 clock=time.time, bind_stuck_after=10.0, bind_deadline=60.0):
        self.cache = cache
        self.feed = queue.Queue(maxsize=200_000)
        self.feed_lag = FeedLag(self.feed)
        self.commands = command_server
        self.writer = writer
        self.publisher = publisher
        self.redis = redis
        self.lister = lister          # () -> CompareRequest, from the API server (comparer)
        self.on_drift = on_drift      # called when a comparison finds drift: relist to heal
        self.on_pods_listed = None    # called with every full pod list (the extender restores)
        self.on_pod_deleted = None    # called with the uid of every pod deleted or terminated
        self.scheduler_verbs = {}     # op -> handler: kube-scheduler's, for the owner's listener
        self.fit_reason = None        # (pod, node) -> why it does not fit, or None (assume)
        self._listing = {}            # kind -> (keys, annotated pods) of a paged list so far
        self.status_parts = []        # () -> dict merged into status() (the extender's)
        self.clock = clock
        self.redis_backoff = RedisBackoff("cache owner")   # every call of the loop to Redis
        self.metrics = OwnerMetrics()  # what /metrics shows, fed at each flush
        self.seq_base = seq_base      # sequence numbers continue across owners
        self.epoch = epoch            # stamped on every row this owner writes
        self.pending = {}             # uid -> pod: unbound pods the cache does not hold
        self._pending_by_name = {}    # (namespace, name) -> uid
        self.removed = OrderedDict()  # uid or node name -> resourceVersion of its removal,
                                      # so a comparison can tell "removed since the list"
        self.outcome = {}             # uid -> (state, namespace, name, node) of an expired or
                                      # forgotten pod, until the pod moves on
        self.latest_report = None
        self.assumed_at = {}          # uid -> when it was assumed (oldest first)
        self.bind_stuck_after = bind_stuck_after   # seconds until an unfinished bind is stuck
        self.bind_deadline = bind_deadline         # ... and until it is forgotten
        self._batch = Batch()
        self._pruned = False
        self.snapshot = Snapshot()
        self.synced = {"pods": False, "nodes": False}
        self.stats = {"applied": 0, "skipped": 0, "corrupted": 0, "commands": 0}
        self._cause, self._actor = "watch", ""
        self._outbox = []
        self._dirty_pods, self._dirty_nodes = set(), set()
        self._tree_version = -1
        self._compare_busy = threading.Event()
        cache.subscribe(self._on_event)
        if command_server is not None:
            self.register(self.handlers())

    # --- events ------------------------------------------------------------------------------
    def _on_event(self, event):
        now = self.clock()
        self._outbox.append((event, self._cause, self._actor, now))
        if event.kind == "pod_assumed":
            self.assumed_at[event.key] = now
        elif event.kind in _LEAVE_ASSUMED:
            self.assumed_at.pop(event.key, None)
        if event.kind.startswith("pod_"):
            self._dirty_pods.add(event.key)
            self._dirty_nodes.add(event.node)
            outcome = _OUTCOMES.get(event.kind)
            if outcome:
                self.outcome[event.key] = (outcome, event.namespace, event.name, event.node)
            elif event.kind in ("pod_assumed", "pod_added", "pod_confirmed"):
                self.outcome.pop(event.key, None)
        elif event.kind.startswith("node_"):
            self._dirty_nodes.add(event.key)

    def _as(self, cause, actor=""):
        self._cause, self._actor = cause, actor

    # --- the feed ----------------------------------------------------------------------------
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
        """Apply one feed item; returns how many events it held (a batch holds many)."""
        if type(item) is DecodedEvents:
            self.feed_lag.applied(item.received, self.clock())
            self._as("watch")
            if item.kind == "pods":
                for etype, record in item.events:
                    self._apply_pod_record(etype, record)
            else:
                for etype, node in item.events:
                    self._apply_node(etype, node)
            return len(item.events)
        if type(item) is DecodedPage:
            self.feed_lag.applied(item.received, self.clock())
            self._as("relist")
            self._apply_page(item)
            return len(item.items)
        if type(item) is DecodedList:
            self._as("relist")
            keys, annotated = self._listing.pop(item.kind, (set(), []))
            if item.kind == "pods":
                self._drop_unlisted_pods(keys)
                if self.on_pods_listed is not None:
                    self.on_pods_listed(annotated)
            else:
                self._drop_unlisted_nodes(keys)
            self.synced[item.kind] = True
            return 1
        if isinstance(item, Watched):
            self._as("watch")
            if item.kind == "pods":
                self._apply_pod(item.type, item.obj)
            else:
                self._apply_node(item.type, item.obj)
        elif isinstance(item, Relisted):
            self._as("relist")
            if item.kind == "pods":
                self._reconcile_pods(item.items)
                if self.on_pods_listed is not None:
                    self.on_pods_listed(item.items)
            else:
                self._reconcile_nodes(item.items)
            self.synced[item.kind] = True
        elif isinstance(item, CompareRequest):
            self._compare(item)
        elif isinstance(item, CompareFailed):
            self._batch.comparer_runs.append({"at": _iso(self.clock()), "clean": False,
                                              "report": {}, "error": item.error})
        return 1

    def _apply_pod(self, kind, pod):
        """A pod Mapping from the feed (a Reflector in this process): digested here."""
        uid = _uid(pod)
        if not uid:
            self.stats["skipped"] += 1
        elif kind == "DELETED":
            self._remove_pod(uid, _rv(pod))
        else:
            try:
                info = make_pod_info(pod)
            except CacheError as exc:
                self._skip_pod(uid, exc)
                return
            self._apply_pod_info(info, pod, None)

    def _apply_pod_record(self, kind, record):
        """A pod the decoder process digested (see dashboard/feed/decoder.py)."""
        packed = record[0]
        if packed is None:
            _, uid, rv, why = record
            if kind == "DELETED":
                self._remove_pod(uid, rv)
            else:
                self._skip_pod(uid, why)
        elif kind == "DELETED":
            self._remove_pod(packed[0], packed[4])
        else:
            self._apply_pod_info(unpack_pod_info(packed), None, record[1])

    def _apply_pod_info(self, info, pod, annotations):
        """Add, update or track a digested pod; `pod` is its Mapping, when there is one."""
        uid = info.key
        if info.node_name and info.phase in _TERMINATED:
            self._remove_pod(uid, info.resource_version)
            return
        if not info.node_name:
            self._track_pending(uid, pod if pod is not None else _lean_pod(info, annotations))
            self.stats["applied"] += 1
            return
        self._forget_pending(uid)
        cache = self.cache
        cached = cache.pod_info(uid)
        try:
            if cached is None or cache.is_assumed_pod(_ref(uid)):
                cache.add_pod_info(info)
            elif cached.resource_version != info.resource_version:
                cache.update_pod_info(info)
            else:
                self.stats["skipped"] += 1
                return
            self.stats["applied"] += 1
        except CacheCorruptedError as exc:
            # The API server moved a pod between nodes, which it never does; trust it.
            self.stats["corrupted"] += 1
            log.error("cache corrupted, replacing the pod: %s", exc)
            cache.remove_pod(_ref(uid))
            cache.add_pod_info(info)
        except CacheError as exc:
            self._skip_pod(uid, exc)

    def _remove_pod(self, uid, rv):
        """The pod was deleted or has terminated: it leaves the cache and the pending pods."""
        self._remember_removal(uid, rv)
        self._forget_pending(uid)
        self.outcome.pop(uid, None)
        self._dirty_pods.add(uid)
        if self.cache.pod_info(uid) is not None:
            self.cache.remove_pod(_ref(uid))
        if self.on_pod_deleted is not None:
            self.on_pod_deleted(uid)
        self.stats["applied"] += 1

    def _skip_pod(self, uid, why):
        self.stats["skipped"] += 1
        log.warning("skipped pod %s from the %s: %s", uid, self._cause, why)

    def _remember_removal(self, key, rv):
        self.removed[key] = rv
        self.removed.move_to_end(key)
        if len(self.removed) > 50_000:
            self.removed.popitem(last=False)

    def _track_pending(self, uid, pod):
        self.pending[uid] = pod
        meta = pod.get("metadata") or {}
        self._pending_by_name[(meta.get("namespace") or "", meta.get("name") or "")] = uid
        self._dirty_pods.add(uid)

    def _forget_pending(self, uid):
        pod = self.pending.pop(uid, None)
        if pod is not None:
            meta = pod.get("metadata") or {}
            self._pending_by_name.pop((meta.get("namespace") or "", meta.get("name") or ""), None)
            self._dirty_pods.add(uid)

    def _apply_node(self, kind, node):
        name = _name(node)
        if not name:
            self.stats["skipped"] += 1
            return
        try:
            if kind == "DELETED":
                self._remember_removal(name, _rv(node))
                if self._has_node(name):
                    self.cache.remove_node(node)
            else:
                info = self.cache.node_info(name)
                if info is not None and info.has_node and _rv(info.node) == _rv(node):
                    self.stats["skipped"] += 1
                    return
                self.cache.update_node(None, node)
            self.stats["applied"] += 1
        except CacheError as exc:
            self.stats["skipped"] += 1
            log.warning("skipped node %s from the %s: %s", name, self._cause, exc)

    def _has_node(self, name):
        info = self.cache.node_info(name)
        return info is not None and info.has_node

    @staticmethod
    def _apply_listed(items, key_of, apply) -> set:
        """Apply each listed object as a change; returns the keys the list holds."""
        listed = set()
        for obj in items:
            key = key_of(obj)
            if key:
                listed.add(key)
            apply("MODIFIED", obj)
        return listed

    def _apply_page(self, page):
        """A page of a list in progress: applied now, its keys kept for the list's end."""
        if page.first or page.kind not in self._listing:
            self._listing[page.kind] = (set(), [])
        keys, annotated = self._listing[page.kind]
        if page.kind == "nodes":
            keys.update(self._apply_listed(page.items, _name, self._apply_node))
            return
        keys.update(self._apply_listed(page.items, _record_uid, self._apply_pod_record))
        # only annotated pods matter to on_pods_listed: the extender restores from the
        # bind-info annotation
        annotated.extend(_lean_pod(unpack_pod_info(r[0]), r[1])
                         for r in page.items if r[0] is not None and r[1])

    def _reconcile_pods(self, items):
        """Bring the cache to a fresh list: apply every item, remove what the list lacks."""
        self._drop_unlisted_pods(self._apply_listed(items, _uid, self._apply_pod))

    def _drop_unlisted_pods(self, listed):
        for uid in [u for u in self.cache.pod_keys() if u not in listed]:
            self._dirty_pods.add(uid)
            self.cache.remove_pod(_ref(uid))
        for uid in [u for u in self.pending if u not in listed]:
            self._forget_pending(uid)
            if self.on_pod_deleted is not None:
                self.on_pod_deleted(uid)
        for uid in [u for u in self.outcome if u not in listed]:
            del self.outcome[uid]
            self._dirty_pods.add(uid)

    def _reconcile_nodes(self, items):
        self._drop_unlisted_nodes(self._apply_listed(items, _name, self._apply_node))

    def _drop_unlisted_nodes(self, listed):
        for name in [n for n in self.cache.node_names() if n not in listed]:
            self.cache.remove_node({"metadata": {"name": name}})

    def known_pod(self, uid):
        """(namespace, name) of a pod the watch has shown (pending or cached), else None."""
        pod = self.pending.get(uid)
        if pod is not None:
            meta = pod.get("metadata") or {}
            return meta.get("namespace") or "", meta.get("name") or ""
        info = self.cache.pod_info(uid)
        return (info.namespace, info.name) if info is not None else None

    # --- binds that never finish -------------------------------------------------------------
    def unfinished_binds(self, now, older_than) -> list:
        """(uid, node) of assumed pods whose binding has not finished, assumed more than
        `older_than` seconds before `now`, oldest first."""
        found = []
        for uid, at in self.assumed_at.items():
            if now - at <= older_than:
                break
            status = self.cache.assumed_pod_status(_ref(uid))
            if status is not None and not status[0]:
                found.append((uid, self.cache.pod_info(uid).node_name))
        return found

    def forget_overdue_binds(self, now=None) -> int:
        """Forget every assumed pod whose binding has not finished by the bind deadline,
        so no placement holds its node for ever; each is audited. Returns how many."""
        now = self.clock() if now is None else now
        overdue = self.unfinished_binds(now, self.bind_deadline)
        for uid, node in overdue:
            info = self.cache.pod_info(uid)
            log.warning("pod %s/%s (%s) assumed on %s has not been bound within %g s: "
                        "forgetting it", info.namespace, info.name, uid, node,
                        self.bind_deadline)
            self._as(BIND_DEADLINE_CAUSE, "owner")
            self.cache.forget_pod(_ref(uid, node))
            self._batch.audits.append(
                {"at": _iso(now), "actor": "owner", "action": "forget", "target": uid,
                 "node": node, "ok": True,
                 "message": f"not bound within the bind deadline of {self.bind_deadline:g} s",
                 "details": {"namespace": info.namespace, "name": info.name,
                             "cause": BIND_DEADLINE_CAUSE}})
        return len(overdue)

    # --- commands ----------------------------------------------------------------------------
    def handlers(self) -> dict:
        return {"assume": self.cmd_assume, "finish_binding": self.cmd_finish_binding,
                "forget": self.cmd_forget, "expire": self.cmd_expire, "reap": self.cmd_reap,
                "compare": self.cmd_compare, "get_pod": self.cmd_get_pod,
                "get_node": self.cmd_get_node, "status": self.cmd_status}

    def register(self, handlers: dict, cause: str = None):
        """Serve more commands over Redis (see `caused`)."""
        self.commands.handlers.update(self.caused(handlers, cause))

    def caused(self, handlers: dict, cause: str = None) -> dict:
        """The handlers, counted, timed (metrics), their transitions recorded with `cause`
        (by default the actor's: bind, reaper, owner, or operator for a person or tool)
        and the actor."""
        def caused(op, handler):
            def run(args, actor):
                self.stats["commands"] += 1
                self._as(cause or _COMMAND_CAUSES.get(actor, "operator"), actor)
                with self.metrics.timing(op):
                    return handler(args, actor)
            return run
        return {op: caused(op, h) for op, h in handlers.items()}

    def _aggregates(self, node):
        info = self.cache.node_info(node)
        if info is None:
            return None
        return {"pods": len(info.pods), "requested": info.requested.as_dict(),
                "non_zero_requested": info.non_zero_requested.as_dict(),
                "allocatable": info.allocatable.as_dict()}

    def _cached_uid(self, args) -> str:
        """The uid a command names, directly or as the namespace/name of a pending pod."""
        if args.get("uid"):
            return args["uid"]
        namespace, name = args.get("namespace") or "", args.get("name") or ""
        if not name:
            raise CommandError(400, "name the pod by uid, or by namespace and name")
        uid = self._pending_by_name.get((namespace, name))
        if not uid:
            raise CommandError(404, f"no pending pod {namespace}/{name}")
        return uid

    def cmd_assume(self, args, actor):
        node = args.get("node") or ""
        if not node:
            raise CommandError(400, "assume needs a node")
        uid = self._cached_uid(args)
        if self.cache.pod_state(_ref(uid)) is not None:
            raise CommandError(409, f"pod {uid} is already {self.cache.pod_state(_ref(uid))}; "
                                    f"only a pending pod can be assumed")
        pod = self.pending.get(uid)
        if pod is None:
            raise CommandError(404, f"pod {uid} is not a pending pod of the cluster")
        if not self._has_node(node):
            raise CommandError(404, f"node {node!r} is not in the cache")
        meta = pod.get("metadata") or {}
        placed = dict(pod, spec=dict(pod.get("spec") or {}, nodeName=node))
        misfit = self.fit_reason(placed, node) if self.fit_reason is not None else None
        if misfit and not args.get("force"):
            raise CommandError(409, f"pod {meta.get('namespace')}/{meta.get('name')} does not "
                                    f"fit on node {node}: {misfit} (force assumes it anyway)")
        before = self._aggregates(node)
        try:
            self.cache.assume_pod(placed)
        except CacheError as exc:
            raise CommandError(409, str(exc)) from None
        return {"uid": uid, "namespace": meta.get("namespace"), "name": meta.get("name"),
                "node": node, "forced_past": misfit, "before": before,
                "after": self._aggregates(node)}

    def cmd_finish_binding(self, args, actor):
        uid = self._cached_uid(args)
        changed = self.cache.is_assumed_pod(_ref(uid))
        self.cache.finish_binding(_ref(uid), now=args.get("now"))
        return {"uid": uid, "changed": changed}

    def _assumed_node(self, uid, strict):
        info = self.cache.pod_info(uid)
        if info is None or not self.cache.is_assumed_pod(_ref(uid)):
            if strict or info is not None:
                state = self.cache.pod_state(_ref(uid)) or "not in the cache"
                raise CommandError(409, f"pod {uid} is {state}, not Assumed")
            return None
        return info.node_name

    def cmd_forget(self, args, actor):
        uid = self._cached_uid(args)
        node = self._assumed_node(uid, args.get("strict", False))
        if node is None:
            return {"uid": uid, "changed": False}
        if args.get("node") and args["node"] != node:
            raise CommandError(409, f"pod {uid} is assumed on {node!r}, not {args['node']!r}")
        before = self._aggregates(node)
        self.cache.forget_pod(_ref(uid, node))
        return {"uid": uid, "changed": True, "node": node, "before": before,
                "after": self._aggregates(node)}

    def cmd_expire(self, args, actor):
        uid = self._cached_uid(args)
        node = self._assumed_node(uid, True)
        before = self._aggregates(node)
        self.cache.expire_pod(_ref(uid), now=args.get("now"))
        return {"uid": uid, "changed": True, "node": node, "before": before,
                "after": self._aggregates(node)}

    def cmd_reap(self, args, actor):
        return {"expired": self.cache.cleanup_assumed_pods(now=args.get("now"))}

    def cmd_get_pod(self, args, actor):
        uid = self._cached_uid(args)
        state = self.cache.pod_state(_ref(uid))
        if state is None:
            if uid in self.pending:
                return {"uid": uid, "state": "Pending", "pod": self.pending[uid]}
            raise CommandError(404, f"pod {uid} is neither cached nor pending")
        status = self.cache.assumed_pod_status(_ref(uid))
        return {"uid": uid, "state": state, "pod": self.cache.get_pod(_ref(uid)),
                "binding_finished": status[0] if status else None,
                "deadline": status[1] if status else None}

    def cmd_get_node(self, args, actor):
        """A node's images (name, size, nodes holding it): the read model only counts them."""
        info = self.cache.node_info(args.get("name") or "")
        if info is None:
            raise CommandError(404, f"node {args.get('name')!r} is not in the cache")
        return {"name": info.name, "generation": info.generation,
                "images": sorted([image, state.size, state.num_nodes]
                                 for image, state in info.image_states.items())}

    def cmd_status(self, args, actor):
        return self.status()

    def status(self) -> dict:
        cache = self.cache
        stuck = self.unfinished_binds(self.clock(), self.bind_stuck_after)
        # The tree holds exactly the nodes with a Node object: counted, not listed, each flush.
        return {"nodes": cache.node_tree.num_nodes, "node_infos": cache.node_count(),
                "pods": cache.pod_count(), "assumed": cache.assumed_count(),
                "pending": len(self.pending), "generation": cache.generation,
                "snapshot_generation": self.snapshot.generation,
                "seq": self.seq_base + cache.event_seq, "synced": all(self.synced.values()),
                "feed_backlog": self.feed.qsize(), "feed_lag": self.feed_lag.seconds(self.clock()),
                "read_model_backlog": self._unwritten(),
                "round_robin": self._round_robin(),
                "binds_stuck": len(stuck), "oldest_stuck": self._oldest_stuck(stuck),
                "bind_stuck_after": self.bind_stuck_after, "bind_deadline": self.bind_deadline,
                **self.stats, **{k: v for part in self.status_parts for k, v in part().items()}}

    def _oldest_stuck(self, stuck):
        """The stuck bind the overview links to: the longest waiting, or None."""
        if not stuck:
            return None
        uid, node = stuck[0]
        info = self.cache.pod_info(uid)
        return {"uid": uid, "namespace": info.namespace, "name": info.name, "node": node,
                "assumed_at": self.assumed_at[uid]}

    def _unwritten(self) -> int:
        """Changes the read model has yet to show: rows not yet built, batches not yet written."""
        queued = self.writer.unwritten() if self.writer is not None else 0
        return len(self._dirty_pods) + len(self._dirty_nodes) + queued

    def _round_robin(self) -> dict:
        """NodeTree.next()'s position: the zone it asks next, each zone's next node."""
        position = self.cache.node_tree.position()
        return {"zone_index": position["zone_index"],
                "zones": [[zone_display(zone), index]
                          for zone, index in position["zones"].items()]}

    # --- comparer ----------------------------------------------------------------------------
    def cmd_compare(self, args, actor):
        """List in the background; compare once the feed has caught up with the lists."""
        if self.lister is None:
            raise CommandError(503, "this owner has no lister for comparisons")
        if self._compare_busy.is_set():
            return {"started": False, "reason": "a comparison is already running"}
        self._compare_busy.set()

        def run():
            try:
                self.feed.put(self.lister())
            except Exception as exc:
                log.warning("comparer could not list the cluster: %s", exc)
                self.feed.put(CompareFailed(f"could not list the cluster: "
                                            f"{type(exc).__name__}: {exc}"))
                self._compare_busy.clear()
        threading.Thread(target=run, name="comparer-list", daemon=True).start()
        return {"started": True}

    def _compare(self, request: CompareRequest):
        try:
            # Not the owner's pending map: a pod it wrongly believes unbound is exactly
            # the drift to find.
            report = self._settled(compare(self.cache, request.nodes, request.pods),
                                   request.resource_version)
            # An assumed pod whose bind is overdue is drift too, though a relist cannot heal
            # it (the pod is still unbound in the cluster): the bind deadline does.
            overdue = [uid for uid, _ in self.unfinished_binds(self.clock(),
                                                                self.bind_stuck_after)]
            details = dict(report.as_dict(), overdue_binds=overdue,
                           watch_behind=request.watch_behind)
            details["clean"] = report.clean and not overdue
            self._batch.comparer_runs.append(
                {"at": _iso(self.clock()), "clean": details["clean"], "report": details,
                 "error": ""})
            self.latest_report = report
            if not report.clean and self.on_drift is not None:
                log.warning("the cache drifted from the cluster; relisting: %s",
                            {k: len(v) for k, v in report.as_dict().items()
                             if isinstance(v, list) and v})
                self.on_drift()
        finally:
            self._compare_busy.clear()

    def _settled(self, report, listed_at):
        """Drop what changed after the lists were taken: that is the feed being ahead, not drift."""
        def cached_rv(uid):
            info = self.cache.pod_info(uid)
            return info.resource_version if info is not None else ""

        def node_rv(name):
            info = self.cache.node_info(name)
            return _rv(info.node) if info is not None and info.has_node else ""

        report.stale_pods = [s for s in report.stale_pods if not newer(s[1], listed_at)]
        report.redundant_pods = [u for u in report.redundant_pods
                                 if not newer(cached_rv(u), listed_at)]
        report.missed_pods = [u for u in report.missed_pods
                              if not newer(self.removed.get(u), listed_at)]
        report.stale_nodes = [s for s in report.stale_nodes if not newer(s[1], listed_at)]
        report.redundant_nodes = [n for n in report.redundant_nodes
                                  if not newer(node_rv(n), listed_at)]
        report.missed_nodes = [n for n in report.missed_nodes
                               if not newer(self.removed.get(n), listed_at)]
        return report

    # --- flushing ----------------------------------------------------------------------------
    def note_leader(self, holder: str):
        """The handover, as the first event of this owner's history: numbered right after
        the previous owner's last, ahead of every cache event (their numbers move up one)."""
        self.seq_base += 1
        self._outbox.append((CacheEvent(0, OWNER_LEADING, holder, name=holder), "owner",
                             holder, self.clock()))

    def take_snapshot(self):
        """Bring the owner's snapshot up to date and record what changed, if anything."""
        before = self.snapshot.generation
        changed = self.cache.recently_changed(before)
        self.cache.update_snapshot(self.snapshot)
        if self.snapshot.generation != before:
            self._batch.samples.append(
                {"at": _iso(self.clock()), "generation": self.snapshot.generation,
                 "cache_generation": self.cache.generation, "changed_nodes": changed[:500]})

    def flush(self) -> int:
        """Hand the changes since the last flush to the writer and the publisher."""
        events, self._outbox = self._outbox, []
        batch, self._batch = self._batch, Batch()
        published = []
        for event, cause, actor, at in events:
            row = {"seq": self.seq_base + event.seq, "at": _iso(at), "kind": event.kind,
                   "key": event.key, "namespace": event.namespace, "name": event.name,
                   "node": event.node, "from_state": event.from_state or "",
                   "to_state": event.to_state or "", "cause": cause, "actor": actor,
                   "generation": event.generation}
            if event.kind != "snapshot_updated":
                batch.transitions.append(row)
            published.append(dict(row, at=at))
        self._rows(batch)
        if (not self._pruned and all(self.synced.values())
                and not self._dirty_pods and not self._dirty_nodes):
            batch.prune_epoch, self._pruned = self.epoch, True
        status = self.status()
        self.feed_lag.new_window()
        self.metrics.record_flush(events, status, batch.comparer_runs)
        publish = None
        if self.publisher is not None:
            publish = functools.partial(self.publisher.publish, published, status)
        if self.writer is not None:
            # Pages re-render from the read model, so they hear of a change only once
            # its rows are written; published first, they would draw the old state.
            self.writer.submit(batch, then=publish)
        elif publish is not None:
            publish()
        if self.redis is not None:
            # While Redis is unreachable the status waits for the flush after it answers
            # again: it says everything up to then, and the sequence number stays the latest.
            pipe = self.redis.pipeline()
            pipe.set(STATUS_KEY, orjson.dumps(dict(status, at=self.clock())), ex=STATUS_TTL)
            pipe.set(SEQ_KEY, status["seq"])
            self.redis_backoff.attempt(pipe.execute)
        return len(events)

    def _rows(self, batch):
        tree = self.cache.node_tree
        if tree.version != self._tree_version:
            self._tree_version = tree.version
            self._dirty_nodes.update(self.cache.node_names())
            self._tree_index = {name: i for i, name in enumerate(tree.list())}
        now = _iso(self.clock())
        # At most ROWS_PER_FLUSH rows a flush: after a sync of 150,000 pods the backlog is
        # written over a few seconds of flushes instead of stalling the owner for seconds.
        for _ in range(min(len(self._dirty_nodes), ROWS_PER_FLUSH)):
            name = self._dirty_nodes.pop()
            if name:
                batch.nodes[name] = self._node_row(name, now)
        for _ in range(min(len(self._dirty_pods), ROWS_PER_FLUSH)):
            uid = self._dirty_pods.pop()
            batch.pods[uid] = self._pod_row(uid, now)

    def _node_row(self, name, now):
        info = self.cache.node_info(name)
        if info is None:
            return None
        zone = self.cache.node_tree.zone_of(name)
        return {"zone": zone_display(zone) if zone is not None else "",
                "tree_index": self._tree_index.get(name, -1), "has_node": info.has_node,
                "generation": info.generation, "pods": len(info.pod_keys),
                "requested": info.requested.as_dict(),
                "non_zero_requested": info.non_zero_requested.as_dict(),
                "allocatable": info.allocatable.as_dict(),
                "host_ports": info.used_ports.entries(), "images": len(info.image_states),
                **node_details(info), "changed_at": now, "owner_epoch": self.epoch}

    def _pod_row(self, uid, now):
        info = self.cache.pod_info(uid)
        seq = self.seq_base + self.cache.event_seq
        if info is not None:
            status = self.cache.assumed_pod_status(_ref(uid))
            zone = self.cache.node_tree.zone_of(info.node_name)
            return {"namespace": info.namespace, "name": info.name, "node": info.node_name,
                    "zone": zone_display(zone) if zone is not None else "",
                    "state": "Assumed" if status is not None else "Added",
                    "assumed_at": (_iso(self.assumed_at[uid]) if uid in self.assumed_at
                                   and status is not None else None),
                    "binding_finished": bool(status and status[0]),
                    "deadline": status[1] if status else None, "phase": info.phase,
                    "resource_version": info.resource_version, "labels": info.labels or {},
                    "milli_cpu": info.requested.milli_cpu, "memory": info.requested.memory,
                    "scalar_resources": dict(info.requested.scalar_resources),
                    "priority": info.priority, "seq": seq, "changed_at": now,
                    "owner_epoch": self.epoch}
        pod = self.pending.get(uid)
        outcome = self.outcome.get(uid)
        if outcome is None and pod is None:
            return None
        meta = (pod or {}).get("metadata") or {}
        state, namespace, name, node = outcome or ("Pending", meta.get("namespace", ""),
                                                   meta.get("name", ""), "")
        return {"namespace": namespace, "name": name, "node": node, "zone": "", "state": state,
                "assumed_at": None, "binding_finished": False,
                "deadline": None, "phase": ((pod or {}).get("status") or {}).get("phase", ""),
                "resource_version": meta.get("resourceVersion", ""),
                "labels": meta.get("labels") or {}, **pod_request_columns(pod),
                "priority": int(((pod or {}).get("spec") or {}).get("priority") or 0),
                "seq": seq, "changed_at": now, "owner_epoch": self.epoch}
