"""What kube-scheduler's informers and cache hold, for its stand-in (standin.py).

kube-scheduler runs its own filter plugins on its own cache before it calls an extender,
and preempts from it. The stand-in does the same on a `schedcache.Cache` and the
`scheduling` library's DefaultAlgorithm (its records: free resources, taints, labels,
in the zone-interleaved NodeTree order), fed as kube-scheduler's informers are: reflectors
of nodes, pods and PersistentVolumeClaims (`dashboard/kube/reflector.py`: list, then watch)
in threads of the worker process, their events applied by `sync()` at the start of each
period, in the period's own thread. Of the claims only their names are kept
(`dashboard/kube/claims.py`): VolumeBinding's PreFilter refuses a pod whose claim does not
exist, and that is all the stand-in checks of them. A role that may not list claims (403)
does not stop it: it schedules without them, as the owner's diagnosis names them unchecked.
Why not list each period: at the demo's size (100 nodes, 2,000 pods) a list of every pod
costs the worker 0.3-0.4 s of CPU each second; applying a second's watch events costs
a few milliseconds.

A watch event that never arrives (the demo's weather loses 2% on purpose) would hide a
pod for good, so the view relists, as the owner's comparer heals the owner's cache: every
RELIST_PERIOD seconds, or RELIST_COST_FACTOR times the last relist's duration if longer. A
relist of the demo's cluster costs about 0.7 s of CPU, of 600,000 pods about a minute (the
stand-in's and the API server's each): every 120 s, most of a core of two.

Of a node the view keeps what those filters read (`node_filtered`: no images, no
conditions), made as each page or event is read. Assigned live pods are in the cache
(added; the stand-in's own binds assumed until the watch confirms them), pods without a
node in `pending`. Of a pod with a node the view keeps only what kube-scheduler's filters
count on its node (the cache's digest: requests, host ports, labels..., without the pod's
frozen Mapping unless inter-pod affinity reads its terms) and the few facts its preemption
reads: its start time as a number, in `started`, and whether it is being deleted or was
preempted, in `condemned` for the few that are. The pods reflector's digest makes a
`BoundPod` of it as each list page or event is read (no page of whole pods is held), and
applying it spreads it into those; the cache is the only holder of a placed pod's digest
(bench/standin_view_memory.py, issue 26).
A pod that finished is not held at all: it counts nowhere. A pod without a node is kept as
what a period picks pods by (its queue order, version, scheduler, the facts preemption
reads) and the pod itself as compressed JSON (`PendingPod`, about 2 kB where the parsed
pod costs 17 kB): under churn pending pods pile up by the thousand, and a period thaws
only the few it attempts, the very pod the API server sent. The lists come in pages of
PAGE_SIZE, as client-go's pager asks for them: pymalloc cannot hand back an arena that
still holds one kept digest, so the larger a page of parsed pods, the more of its memory
stays (5,000 a page left 160 MB free inside the process at 15,000 pods). `changes` counts
the cluster events that may let an unschedulable pod fit (kube-scheduler requeues on
them): an assigned pod deleted or finished, a node added or changed, a claim come or gone.
"""
import logging
import threading
import time
import zlib
from collections import deque
from datetime import datetime
from itertools import chain
from typing import NamedTuple

import orjson

from schedcache import Cache, CacheError
from schedcache.events import ADDED, ASSUMED
from schedcache.podinfo import PodInfo, make_pod_info
from scheduling import DefaultAlgorithm
from scheduling.queue_sort import queue_key

from dashboard.kube.claims import ClaimNames, claim_key
from dashboard.kube.reflector import CLAIMS, Reflector, Relisted
from dashboard.standin.standin_queue import timestamp_text

log = logging.getLogger(__name__)

FINISHED = ("Succeeded", "Failed")
RELIST_PERIOD = 120.0
RELIST_COST_FACTOR = 20  # a relist waits 20 times its duration: at most ~5% of the time
PAGE_SIZE = 500          # client-go's pager's default
SCHEDULER_NAME = "default-scheduler"    # a pod's schedulerName when it names none


NODE_METADATA = ("name", "uid", "resourceVersion", "labels")


def node_filtered(node) -> dict:
    """The nodes reflector's digest: of a node only what kube-scheduler's filter plugins
    read (its name and labels, spec: taints and unschedulable, status.allocatable). The
    images, conditions, addresses and annotations feed scores and kubelet, which the
    stand-in has none of, and were three quarters of a node held (issue 26)."""
    metadata = node.get("metadata") or {}
    return {"metadata": {k: metadata[k] for k in NODE_METADATA if k in metadata},
            "spec": node.get("spec") or {},
            "status": {"allocatable": (node.get("status") or {}).get("allocatable") or {}}}


def _uid(pod) -> str:
    return pod["metadata"]["uid"]


def _node_of(pod) -> str:
    return (pod.get("spec") or {}).get("nodeName") or ""


def _finished(pod) -> bool:
    return (pod.get("status") or {}).get("phase") in FINISHED


def _ref(uid) -> dict:
    """A pod as the cache's key lookups need it: its uid."""
    return {"metadata": {"uid": uid}}


def _node_ref(name) -> dict:
    """A node as the old side of the cache's update, and a removal, need it: its name."""
    return {"metadata": {"name": name}}


def marked_preempted(pod) -> bool:
    """Marked DisruptionTarget by a scheduler's preemption."""
    return any(c.get("type") == "DisruptionTarget" and c.get("reason") == "PreemptionByScheduler"
               for c in (pod.get("status") or {}).get("conditions") or ())


class VictimFacts(NamedTuple):
    """What kube-scheduler's preemption reads of a pod on a node beyond the cache's digest."""
    start_time: str      # status.startTime ("" if none)
    deleting: bool       # metadata.deletionTimestamp is set
    preempted: bool      # marked_preempted()


def victim_facts(pod) -> VictimFacts:
    return VictimFacts((pod.get("status") or {}).get("startTime") or "",
                       bool(pod["metadata"].get("deletionTimestamp")), marked_preempted(pod))


class BoundPod(NamedTuple):
    """A pod with a node as the pods reflector's digest makes it (see the module doc): the
    cache's digest and the VictimFacts, which applying it spreads into the view's tables."""
    info: PodInfo
    start_time: str
    deleting: bool
    preempted: bool
    finished: bool


def start_seconds(text: str) -> int | str:
    """status.startTime as the view keeps it: whole seconds since the epoch (an int is half
    the string), or the text itself when start_text() would not give it back as it was."""
    try:
        seconds = int(datetime.fromisoformat(text).timestamp())
    except ValueError:
        return text
    return seconds if timestamp_text(seconds) == text else text


def start_text(kept: int | str) -> str:
    return timestamp_text(kept) if isinstance(kept, int) else kept


class PendingPod(NamedTuple):
    """A pod without a node as the view keeps it (see the module doc)."""
    uid: str
    order: tuple         # scheduling.queue_sort.queue_key()
    version: str         # metadata.resourceVersion
    scheduler: str       # spec.schedulerName
    facts: VictimFacts   # an assumed pod is a victim before the watch shows it bound
    finished: bool
    frozen: bytes        # the pod, orjson then zlib

    def thaw(self) -> dict:
        return orjson.loads(zlib.decompress(self.frozen))


def _version(pod) -> str:
    return pod["metadata"].get("resourceVersion") or ""


def pending_pod(pod) -> PendingPod:
    return PendingPod(_uid(pod), queue_key(pod), _version(pod),
                      (pod.get("spec") or {}).get("schedulerName", SCHEDULER_NAME),
                      victim_facts(pod), _finished(pod), zlib.compress(orjson.dumps(pod), 1))


def kept(pod):
    """The pods reflector's digest: a pod with a node as a BoundPod, one without as a
    PendingPod. A pod either cannot be made of is kept whole: applying a bound one fails as
    before, and one without a node is never attempted (no order to queue it in)."""
    try:
        if not _node_of(pod):
            return pending_pod(pod)
        return BoundPod(make_pod_info(pod, mapping=False), *victim_facts(pod), _finished(pod))
    except (CacheError, KeyError, TypeError, AttributeError, orjson.JSONEncodeError):
        return pod


def _key(kept_pod) -> str:
    """A pod's uid, whichever way the view keeps it."""
    if isinstance(kept_pod, BoundPod):
        return kept_pod.info.key
    if isinstance(kept_pod, PodInfo):
        return kept_pod.key
    return kept_pod.uid if isinstance(kept_pod, PendingPod) else _uid(kept_pod)


class ClusterView:
    """The cluster as the stand-in's scheduler sees it; see the module doc. Only the thread
    calling sync() changes the cache, pods and nodes (the pods reflector reads `held` and
    the cache)."""

    def __init__(self, api, clock=time.monotonic, **reflector_options):
        self.cache = Cache(ttl=0)     # assumed pods wait for the watch, as kube-scheduler's
        self.algorithm = DefaultAlgorithm(self.cache)
        self.held = {}                # uid -> PendingPod, or a pod the digest could not make
                                      # (whole): the pods not in the cache as its digest alone
        self.pending = {}             # uid -> PendingPods, not finished nor assumed (a
                                      # period's candidates, without a pass over them all)
        self.started = {}             # uid -> start_seconds() of a placed pod that has started
        self.condemned = {}           # uid -> (deleting, preempted) of a placed pod with either
        self.nodes = set()            # names of the nodes in the cache (it keeps its own
                                      # copy: whole, 20,000 nodes were 550 MB here)
        self.claims = ClaimNames()    # the claims there are: (namespace, name)
        self.changes = 0
        self._inbox = deque()         # reflector items, appended from their threads
        self._listed = {kind: threading.Event() for kind in ("nodes", "pods")}
        self._synced = set()
        digests = {"pods": self._kept, "nodes": node_filtered, CLAIMS: claim_key}
        options = {"page_size": PAGE_SIZE, **reflector_options}
        self._reflectors = {kind: Reflector(api, kind, self._receive, digest=digests.get(kind),
                                            **options)
                            for kind in ("nodes", "pods", CLAIMS)}
        self._clock = clock
        self._relist_asked = clock()  # when the relist in flight was asked (the first list's)
        self._relist_due = None       # when the next is, once that one is in

    def start(self) -> "ClusterView":
        for reflector in self._reflectors.values():
            reflector.start(name=f"standin-{reflector.kind}")
        return self

    def stop(self) -> None:
        for reflector in self._reflectors.values():
            reflector.stop()

    def _kept(self, pod):
        """kept(), in the pods reflector's thread, but what the view holds of the pod when
        the pod is unchanged (its resourceVersion), as most are in a relist: a relist then
        makes digests for the changed pods only, instead of a second set of every pod. A
        placed pod's is the cache's PodInfo, which applying leaves as it is."""
        uid, version = pod["metadata"]["uid"], _version(pod)
        held = self.held.get(uid)                        # one dict read: safe across threads
        if held is None:
            info = self.cache.pod_info(uid)               # under the cache's lock
            if info is not None and info.resource_version == version:
                return info
        elif not isinstance(held, dict) and held.version == version:
            return held
        return kept(pod)

    def _receive(self, item) -> None:
        self._inbox.append(item)
        if isinstance(item, Relisted) and item.kind in self._listed:
            self._listed[item.kind].set()

    def sync(self, timeout: float = 0.0) -> bool:
        """Apply what the reflectors delivered; True once nodes and pods were both listed
        (waiting up to `timeout` seconds for the first lists), and the claims too unless
        the API server forbids them (never waited for: a denial lasts)."""
        for listed in self._listed.values():
            listed.wait(timeout)
        inbox = self._inbox
        while inbox:
            item = inbox.popleft()
            try:
                if isinstance(item, Relisted):
                    self._relisted(item)
                elif item.kind == "nodes":
                    self._node_event(item.type, item.obj)
                elif item.kind == CLAIMS:
                    self.changes += self.claims.watched(item.type, item.obj)
                else:
                    self._pod_event(item.type, item.obj)
            except CacheError as exc:
                # The cache refused an event its state machine cannot take (a pod moved
                # between nodes, say): skip it rather than stop scheduling, and relist.
                log.warning("the stand-in's view skipped a %s event (relisting): %s",
                            item.kind, exc)
                self._reflectors[item.kind].request_relist()
        if len(self._synced) < 2 or not (self.claims.known
                                          or self._reflectors[CLAIMS].forbidden):
            return False
        if self._relist_asked is None and self._clock() >= self._relist_due:
            self._relist_asked = self._clock()
            for reflector in self._reflectors.values():
                reflector.request_relist()
        self.algorithm.refresh()
        return True

    # --- nodes -------------------------------------------------------------------------
    def _node_event(self, kind, node) -> None:
        name = node["metadata"]["name"]
        if kind == "DELETED":
            if name in self.nodes:
                self.nodes.remove(name)
                self.cache.remove_node(node)
            return
        if name in self.nodes:
            self.cache.update_node(_node_ref(name), node)
        else:
            self.cache.add_node(node)
            self.nodes.add(name)
        self.changes += 1

    # --- pods --------------------------------------------------------------------------
    def _pod_event(self, kind, pod) -> None:
        if kind == "DELETED":
            self._remove_pod(pod)
        else:
            self._put_pod(pod)

    def holds(self, uid) -> bool:
        """Whether the view holds the pod: pending, placed, or kept whole."""
        return uid in self.held or self.cache.pod_state(_ref(uid)) is not None

    def victim_facts(self, uid) -> VictimFacts | None:
        """What preemption reads of a pod in the cache (None if the view lost it)."""
        held = self.held.get(uid)
        if held is not None:
            return victim_facts(held) if isinstance(held, dict) else held.facts
        if self.cache.pod_state(_ref(uid)) is None:
            return None
        started = self.started.get(uid)
        return VictimFacts(start_text(started) if started is not None else "",
                           *self.condemned.get(uid, (False, False)))

    def _put_pod(self, pod) -> None:
        if isinstance(pod, BoundPod):
            self._put_bound(pod)
            return
        if isinstance(pod, PodInfo):
            # The cache's own, unchanged (_kept); should the cache have moved on meanwhile,
            # it is put back as it was listed, with the facts the view holds.
            if self.cache.pod_info(pod.key) is not pod:
                facts = self.victim_facts(pod.key) or VictimFacts("", False, False)
                self._put_bound(BoundPod(pod, *facts, False))
            return
        if isinstance(pod, PendingPod):
            self.held[pod.uid] = pod
            if pod.finished or self.is_assumed(pod.uid):
                self.pending.pop(pod.uid, None)
            else:
                self.pending[pod.uid] = pod
            return
        uid = _uid(pod)
        self._forget_placed(uid)
        self.held[uid] = pod
        self.pending.pop(uid, None)
        if not _node_of(pod):
            return
        state = self.cache.pod_state(pod)
        if _finished(pod):
            if state is not None:
                self.cache.remove_pod(pod)
                self.changes += 1
        elif state == ADDED:
            self.cache.update_pod(pod, pod)
        else:                          # new, or the watch confirming our own bind
            self.cache.add_pod(pod)

    def _put_bound(self, bound: BoundPod) -> None:
        """_put_pod for a pod with a node, from the cache's digest."""
        info = bound.info
        uid = info.key
        self.held.pop(uid, None)
        self.pending.pop(uid, None)
        state = self.cache.pod_state(_ref(uid))
        if bound.finished:
            self._forget_placed(uid)
            if state is not None:
                self.cache.remove_pod(_ref(uid))
                self.changes += 1
            return
        if bound.start_time:
            self.started[uid] = start_seconds(bound.start_time)
        else:
            self.started.pop(uid, None)
        if bound.deleting or bound.preempted:
            self.condemned[uid] = (bound.deleting, bound.preempted)
        else:
            self.condemned.pop(uid, None)
        if state == ADDED:
            self.cache.update_pod_info(info)
        else:                          # new, or the watch confirming our own bind
            self.cache.add_pod_info(info)

    def _forget_placed(self, uid) -> None:
        self.started.pop(uid, None)
        self.condemned.pop(uid, None)

    def _remove_pod(self, pod) -> None:
        if isinstance(pod, BoundPod):
            uid, node = pod.info.key, pod.info.node_name
        elif isinstance(pod, PodInfo):  # the cache's own: a deletion at the version held
            uid, node = pod.key, pod.node_name
        elif isinstance(pod, PendingPod):
            uid, node = pod.uid, ""
        else:
            uid, node = _uid(pod), _node_of(pod)
        self._remove(uid, node)

    def _remove(self, uid, node) -> None:
        """The pod is gone; `node`: the one it was last seen on ("" when none)."""
        self.held.pop(uid, None)
        self.pending.pop(uid, None)
        self._forget_placed(uid)
        state = self.cache.pod_state(_ref(uid))
        if state is not None:
            self.cache.remove_pod(_ref(uid))
            if state != ASSUMED or node:
                self.changes += 1

    def _relisted(self, relisted) -> None:
        """A fresh list replaces what this kind held (the first sync, or after a 410)."""
        if relisted.kind == CLAIMS:
            self.changes += bool(self.claims.listed(relisted.items))
            return
        if relisted.kind == "nodes":
            listed = {n["metadata"]["name"]: n for n in relisted.items}
            for name in [n for n in self.nodes if n not in listed]:
                self._node_event("DELETED", _node_ref(name))
            for node in listed.values():
                self._node_event("MODIFIED", node)
        else:
            listed = {_key(p): p for p in relisted.items}
            for uid in [u for u in chain(self.held, self.cache.pod_keys()) if u not in listed]:
                held = self.held.get(uid)
                if held is not None:
                    self._remove_pod(held)
                else:
                    info = self.cache.pod_info(uid)
                    self._remove(uid, info.node_name if info is not None else "")
            for pod in listed.values():
                self._put_pod(pod)
            if self._relist_asked is not None:
                self._relist_done()
        self._synced.add(relisted.kind)

    def _relist_done(self) -> None:
        """The pods' list asked for is applied (it dominates a relist's cost): the next
        relist waits RELIST_PERIOD, or RELIST_COST_FACTOR times this one's duration."""
        now = self._clock()
        took = now - self._relist_asked
        wait = max(RELIST_PERIOD, RELIST_COST_FACTOR * took)
        self._relist_asked, self._relist_due = None, now + wait
        log.info("the stand-in's view relisted in %.1f s; the next relist in %.0f s", took, wait)

    # --- the stand-in's own binds -------------------------------------------------------
    def assume(self, pod, node) -> dict:
        """Count `pod` on `node` from now on (kube-scheduler assumes before it binds);
        returns the assumed pod, for forget()."""
        assumed = {**pod, "spec": {**pod["spec"], "nodeName": node}}
        self.cache.assume_pod(assumed)
        self.pending.pop(_uid(pod), None)
        self.algorithm.refresh()
        return assumed

    def forget(self, assumed) -> None:
        """The bind failed: the pod no longer counts on its node (unless the watch already
        showed it bound there), and is pending again."""
        if self.cache.pod_state(assumed) == ASSUMED:
            self.cache.forget_pod(assumed)
            held = self.held.get(_uid(assumed))
            if isinstance(held, PendingPod) and not held.finished:
                self.pending[held.uid] = held
            self.algorithm.refresh()

    def is_assumed(self, uid) -> bool:
        return self.cache.pod_state(_ref(uid)) == ASSUMED
