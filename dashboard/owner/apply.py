"""Applying the decoder process's batches to the cache: the watch's changes and the lists'.

Pods arrive digested (see decoder.py): a record is `(packed PodInfo, kept annotations)`,
or `(None, uid, resourceVersion, why)` for a pod that could not be digested. Bound pods
go to the cache; unbound ones are kept aside as `pending` (pending_pods.py: digested,
thawed to a lean Mapping when read), which the commands and the extender read; pods and
nodes that left are remembered with the version of their removal, so the comparer can tell
"removed since the list".
"""
import logging
from collections import OrderedDict

from schedcache import CacheCorruptedError, CacheError
from schedcache.podinfo import unpack_pod_info

from dashboard.owner.comparing import newer
from dashboard.owner.decoder import DecodedEvents, DecodedPage, DecodedRepairs
from dashboard.owner.pending_pods import PendingPods, held_info, lean_pod
from dashboard.owner.pod_ref import pod_ref

log = logging.getLogger(__name__)

_TERMINATED = ("Succeeded", "Failed")
REMEMBERED_REMOVALS = 50_000


def _name(obj):
    return (obj.get("metadata") or {}).get("name") or ""


def _rv(obj):
    return (obj.get("metadata") or {}).get("resourceVersion") or ""


def _record_uid(record):
    return record[0][0] if record[0] is not None else record[1]


class FeedApplier:
    """`stats` counts applied, skipped and corrupted events (the owner's, shared);
    `on_pods_listed(annotated pods)` hears of every complete pod list (the extender
    restores from the pods' bind-info annotation), `on_pod_deleted(uid)` of every pod
    that was deleted or terminated."""

    def __init__(self, cache, journal, rows, stats: dict, pending: PendingPods):
        self.cache = cache
        self.journal = journal
        self.rows = rows
        self.stats = stats
        self.pending = pending        # uid -> pod: unbound pods the cache does not hold
        # Pending pods that came, changed or left so far: the live Pending and pod pages
        # see it move in the published status (they carry no cache event of their own).
        self.pending_changes = 0
        self.removed = OrderedDict()  # uid or node name -> resourceVersion of its removal
        self.synced = {"pods": False, "nodes": False}
        self.on_pods_listed = None
        self.on_pod_deleted = None
        self.on_unpended = None       # (uid): a pod left the pending pods
        self._listing = {}            # kind -> (keys, annotated pods) of a paged list so far

    def apply(self, item) -> int:
        """Apply one decoded item; returns how many events it held."""
        if type(item) is DecodedEvents:
            self.journal.stamp("watch")
            if item.kind == "pods":
                for etype, record in item.events:
                    self._apply_pod_record(etype, record)
            else:
                for etype, node in item.events:
                    self._apply_node(etype, node)
            return len(item.events)
        if type(item) is DecodedRepairs:
            self._apply_repairs(item)
            return len(item.events)
        self.journal.stamp("relist")
        if type(item) is DecodedPage:
            self._apply_page(item)
            return len(item.items)
        # a DecodedList: the list whose pages came before is complete
        keys, annotated = self._listing.pop(item.kind, (set(), []))
        if item.kind == "pods":
            self._drop_unlisted_pods(keys)
            if self.on_pods_listed is not None:
                self.on_pods_listed(annotated)
        else:
            self._drop_unlisted_nodes(keys)
        self.synced[item.kind] = True
        return 1

    def _apply_repairs(self, item):
        """Objects a comparison found drifted, fetched again (see DecodedRepairs): one the
        owner holds at the same or a newer version (the watch got there first) is left as
        it is; a deletion is final (its uid never comes back)."""
        self.journal.stamp("repair")
        apply = self._apply_pod_record if item.kind == "pods" else self._apply_node
        for etype, record in item.events:
            if etype == "DELETED" or not self._holds_as_new(item.kind, record):
                apply(etype, record)
            else:
                self.stats["skipped"] += 1

    def _holds_as_new(self, kind, record) -> bool:
        """The owner holds the object at the record's version or a newer one."""
        if kind == "nodes":
            info = self.cache.node_info(_name(record))
            held = _rv(info.node) if info is not None and info.has_node else ""
            fetched = _rv(record)
        elif record[0] is None:
            return False         # not digested: it is skipped as the watch's would be
        else:
            uid, fetched = record[0][0], record[0][4]
            if self.cache.is_assumed_pod(pod_ref(uid)):
                return False     # confirmed by the fetched pod as by the watch's
            info = held_info(self.pending, self.cache, uid)
            held = info.resource_version if info is not None else ""
        return bool(held) and (held == fetched or newer(held, fetched))

    def uid_named(self, namespace: str, name: str):
        """The uid of the pending pod `namespace/name`, or None."""
        return self.pending.uid_named(namespace, name)

    def watched_pod(self, uid):
        """The pod as the watch has shown it (pending, or as the cache holds it), else None:
        a fresh Mapping each time."""
        pod = self.pending.get(uid)
        if pod is not None:
            return pod
        info = self.cache.pod_info(uid)
        return info.pod if info is not None else None

    # --- pods ---------------------------------------------------------------------------------
    def _apply_pod_record(self, kind, record):
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
            self._apply_pod_info(unpack_pod_info(packed), record[1])

    def _apply_pod_info(self, info, annotations):
        """Add, update or keep aside a digested pod."""
        uid = info.key
        if info.node_name and info.phase in _TERMINATED:
            self._remove_pod(uid, info.resource_version)
            return
        if not info.node_name:
            self._track_pending(info, annotations)
            self.stats["applied"] += 1
            return
        self._forget_pending(uid)
        cache = self.cache
        cached = cache.pod_info(uid)
        try:
            if cached is None or cache.is_assumed_pod(pod_ref(uid)):
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
            cache.remove_pod(pod_ref(uid))
            cache.add_pod_info(info)
        except CacheError as exc:
            self._skip_pod(uid, exc)

    def _remove_pod(self, uid, rv):
        """The pod was deleted or has terminated: it leaves the cache and the pending pods."""
        self._remember_removal(uid, rv)
        self._forget_pending(uid)
        self.rows.pod_left(uid)
        if self.cache.pod_info(uid) is not None:
            self.cache.remove_pod(pod_ref(uid))
        if self.on_pod_deleted is not None:
            self.on_pod_deleted(uid)
        self.stats["applied"] += 1

    def _skip_pod(self, uid, why):
        self.stats["skipped"] += 1
        log.warning("skipped pod %s from the %s: %s", uid, self.journal.cause, why)

    def _remember_removal(self, key, rv):
        self.removed[key] = rv
        self.removed.move_to_end(key)
        if len(self.removed) > REMEMBERED_REMOVALS:
            self.removed.popitem(last=False)

    def _track_pending(self, info, annotations):
        self.pending.put(info, annotations)
        self.rows.dirty_pods.add(info.key)
        self.pending_changes += 1

    def _forget_pending(self, uid):
        if self.pending.pop(uid) is not None:
            self.rows.dirty_pods.add(uid)
            self.pending_changes += 1
            if self.on_unpended is not None:
                self.on_unpended(uid)

    # --- nodes --------------------------------------------------------------------------------
    def _apply_node(self, kind, node):
        name = _name(node)
        if not name:
            self.stats["skipped"] += 1
            return
        try:
            if kind == "DELETED":
                self._remember_removal(name, _rv(node))
                if self.has_node(name):
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
            log.warning("skipped node %s from the %s: %s", name, self.journal.cause, exc)

    def has_node(self, name) -> bool:
        info = self.cache.node_info(name)
        return info is not None and info.has_node

    # --- lists --------------------------------------------------------------------------------
    def _apply_page(self, page):
        """A page of a list in progress: applied now, its keys kept for the list's end."""
        if page.first or page.kind not in self._listing:
            self._listing[page.kind] = (set(), [])
        keys, annotated = self._listing[page.kind]
        if page.kind == "nodes":
            for node in page.items:
                name = _name(node)
                if name:
                    keys.add(name)
                self._apply_node("MODIFIED", node)
            return
        for record in page.items:
            uid = _record_uid(record)
            if uid:
                keys.add(uid)
            self._apply_pod_record("MODIFIED", record)
        # only annotated pods matter to on_pods_listed: the extender restores from the
        # bind-info annotation
        annotated.extend(lean_pod(unpack_pod_info(r[0]), r[1])
                         for r in page.items if r[0] is not None and r[1])

    def _drop_unlisted_pods(self, listed):
        for uid in [u for u in self.cache.pod_keys() if u not in listed]:
            self.rows.dirty_pods.add(uid)
            self.cache.remove_pod(pod_ref(uid))
        for uid in [u for u in self.pending if u not in listed]:
            self._forget_pending(uid)
            if self.on_pod_deleted is not None:
                self.on_pod_deleted(uid)
        for uid in [u for u in self.rows.outcome if u not in listed]:
            self.rows.pod_left(uid)

    def _drop_unlisted_nodes(self, listed):
        for name in [n for n in self.cache.node_names() if n not in listed]:
            self.cache.remove_node({"metadata": {"name": name}})
