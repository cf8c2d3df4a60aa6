"""The owner process's loop: wires the cache to its reflectors, commands, writer and publisher.

One thread applies everything in small steps; the reflectors run in threads of
their own and only hand items to the owner's queue; the writer thread only
writes rows. The leader lease is renewed by a thread of its own (leader.py), which
closes kube-scheduler's extender listener the moment the lease is in doubt. While it
is in doubt the loop keeps the cache current and acts on nothing; it stops (the process
stands by again) the moment the lease is lost or a write finds its term stale (fence.py).
"""
import functools
import gc
import logging
import sys
import threading
import time

from django.conf import settings
from django.db.models import Max

from schedcache import Cache
from scheduling.registry import load_algorithm

from dashboard.celery import app as celery_app
from dashboard.kube import client as kube
from dashboard.kube.binding import FORGET, bind_once
from dashboard.kube.reflector import CLAIMS, KINDS
from dashboard.models import Transition
from dashboard.owner.commands import CommandServer
from dashboard.owner.comparing import CompareRequest, newer
from dashboard.owner.decoder import DecoderProcess
from dashboard.owner.extender.bindsender import BindSender
from dashboard.owner.extender.core import ACTOR as SCHEDULER, CAUSE, Extender
from dashboard.owner.extender.handlers import command_handlers, verb_handlers
from dashboard.owner.extender.listener import ExtenderListener
from dashboard.owner.extender.listener_tls import ExtenderTLS
from dashboard.owner.extender.owner_calls import OwnerCalls
from dashboard.owner.extender.statuses import PodScheduleStatuses
from dashboard.owner.leader import LeaderLease
from dashboard.owner.owner import CacheOwner
from dashboard.owner.projection import ProjectionWriter
from dashboard.owner.publisher import Publisher
from dashboard.owner.status import watch_silence
from dashboard.wire.extender import BIND_INFO_ANNOTATION
from dashboard.wire.keys import OWNER_SEQ
from dashboard.wire.lease import holder_name
from dashboard.wire.tasks import BIND_PODS

log = logging.getLogger(__name__)

FLUSH_PERIOD = 0.1       # events reach browsers and the database within this
SNAPSHOT_PERIOD = 1.0
IDLE_WAIT = 0.02         # seconds an idle owner waits for work before looking again
FEED_CHUNK = 200         # feed items applied between turns at kube-scheduler's calls
CALLING = 1.0            # seconds after its last call kube-scheduler counts as calling
COMMAND_PERIOD = 0.1     # seconds between looks at Redis's commands while it calls non-stop
LIST_TIMEOUT = 300.0     # seconds the comparer waits for its lists (150,000 pods: about 10)
LISTEN_RETRY = 2.0       # seconds between tries to listen while the extender's address is taken
DEADLINE_PERIOD = 1.0    # seconds between looks for binds past their deadline
IN_DOUBT = "the leader lease is in doubt; closed until it is held again"
WATCH_SETTLE = 3.0       # seconds the comparer waits for the watch to pass its lists' version


class LeadershipLost(RuntimeError):
    pass


def tune_gc():
    """The cache holds hundreds of thousands of long-lived objects: collect the young
    generation less often than Python's default."""
    gc.set_threshold(50_000, 20, 100)


def tune_switching():
    """The owner's thread answers kube-scheduler's filter calls (a millisecond or two) while
    the reflector threads parse watch events. Python hands the GIL to a waiting thread
    only every 5 ms by default, so a filter would wait up to 5 ms per reflector turn:
    hand it over every 0.5 ms, which halves the filter's p99."""
    sys.setswitchinterval(0.0005)


def settle_heap():
    """Once synced, move the settled heap out of the collector's way, so that no later
    collection walks every cached pod. Freezing is instant; a full collection first
    (to leave cyclic garbage out) stalled the owner 8 s after a 150,000-pod sync."""
    gc.freeze()


def last_seq(redis) -> int:
    """Where the previous owner stopped numbering: what it published, or what it stored."""
    stored = Transition.objects.aggregate(top=Max("seq"))["top"] or 0
    return max(int(redis.get(OWNER_SEQ) or 0), stored)


def list_for_comparison(decoder: DecoderProcess, stop, settle=WATCH_SETTLE) -> CompareRequest:
    """Fresh lists (taken and cut down in the decoder process), handed over once every
    reflector has passed their version, so that everything the lists show is already in
    the owner's queue ahead of the comparison.

    The lists' version is the whole API server's: on a quiet cluster it moves with every
    lease renewal while the pod and node watches see nothing to move theirs (until a
    bookmark, a minute later). A watch event reaches the reflectors within milliseconds,
    so after `settle` seconds the lists are compared anyway: what they show older than
    that is applied, and what changed since is set aside by the owner (`_settled`)."""
    lists = decoder.list_for_comparison(LIST_TIMEOUT)
    listed_at = lists.resource_version
    deadline = time.monotonic() + settle
    behind = False
    while any(newer(listed_at, r.resource_version) for r in decoder.reflectors):
        if stop.wait(0.05):
            raise RuntimeError("the owner is stopping")
        if time.monotonic() > deadline:
            behind = True
            break
    return CompareRequest(lists.nodes, lists.pods, listed_at, watch_behind=behind)


def build_owner(redis, writer, clock=time.time, lease: LeaderLease = None) -> CacheOwner:
    """The owner; with a `lease`, every write and publish of it fenced by the lease's term."""
    fenced = lease is not None
    owner = CacheOwner(Cache(ttl=settings.SCHEDVIEW_CACHE_TTL),
                       command_server=CommandServer(
                           {}, client=redis, fence=lease.fence if fenced else None,
                           term=lease.term if fenced else None), writer=writer,
                       publisher=Publisher(term_key=lease.term_key if fenced else None),
                       redis=redis, seq_base=last_seq(redis),
                       epoch=int(clock() * 1000), clock=clock,
                       bind_stuck_after=settings.SCHEDVIEW_BIND_STUCK_AFTER,
                       bind_deadline=settings.SCHEDVIEW_BIND_DEADLINE,
                       fence=lease.fence if fenced else None,
                       term=lease.term if fenced else None,
                       checkpoint_period=settings.SCHEDVIEW_CHECKPOINT_PERIOD)
    attach_extender(owner)
    return owner


def publish_binds(batch, term=None):
    """The extender's binds go out through the same Celery path as every other bind,
    with the lease term they were assumed under (the worker refuses a stale one)."""
    celery_app.send_task(BIND_PODS, args=(batch,), kwargs={"term": term})


def attach_extender(owner: CacheOwner, schedule_bind=None) -> Extender:
    """The scheduler extender decides on the owner's cache, in the owner's thread; the
    binds it makes on its own are published from a thread of their own (BindSender)
    unless `schedule_bind`. kube-scheduler's verbs are `owner.scheduler_verbs`, for the
    owner's listener only."""
    algorithm = load_algorithm(settings.SCHEDVIEW_ALGORITHM, cache=owner.cache)
    extender = Extender(owner.cache, algorithm, PodScheduleStatuses(),
                        schedule_bind or BindSender(functools.partial(publish_binds,
                                                                      term=owner.term)),
                        watched_pod=owner.watched_pod,
                        changes=owner.changes)
    # An operator's or a tool's assume is checked by the same filters (when the algorithm
    # can say why a pod does not fit; the SchedulerAlgorithm interface does not require it).
    owner.fit_reason = getattr(algorithm, "fit_reason", None)
    owner.cache.subscribe(extender.on_cache_event)
    owner.applier.on_pods_listed = extender.restore
    owner.applier.on_pod_deleted = extender.released
    owner.register(command_handlers(extender), cause=CAUSE)
    owner.scheduler_verbs = owner.caused(verb_handlers(extender), cause=CAUSE)
    # Every flush then tells the statuses page whether anything it shows moved.
    owner.status_parts.append(lambda: {"extender_statuses": extender.statuses.version})
    return extender


def fenced_binding(post_binding, held):
    """kube-scheduler's bind verb posts its Binding from the listener's thread, after the
    owner's thread assumed the pod: an owner frozen in between must not, woken with its
    lease in doubt or lost, post a bind for an assumption the next leader never held."""
    def post_while_held(uid, namespace, name, node):
        if not held():
            log.warning("bind %s/%s -> %s not posted: %s", namespace, name, node, IN_DOUBT)
            return FORGET, f"not posted: {IN_DOUBT}"
        return post_binding(uid, namespace, name, node)
    return post_while_held


def listen_for_scheduler(calls: OwnerCalls, held=None, refused=None):
    """The owner's own extender listener on SCHEDVIEW_EXTENDER_ADDRESS, serving; None
    (logged, and told to `refused`) while the address is taken or its TLS files are
    unusable: the owner keeps the cache, and the loop tries again after LISTEN_RETRY.
    With `held` (the lease's held()), its binds are posted only while it says so."""
    address = settings.SCHEDVIEW_EXTENDER_ADDRESS
    try:
        tls = (ExtenderTLS(settings.SCHEDVIEW_EXTENDER_CERT, settings.SCHEDVIEW_EXTENDER_KEY,
                           settings.SCHEDVIEW_EXTENDER_CLIENT_CA)
               if settings.SCHEDVIEW_EXTENDER_CERT else None)
        post_binding = functools.partial(bind_once,
                                         timeout=settings.SCHEDVIEW_EXTENDER_BIND_TIMEOUT)
        if held is not None:
            post_binding = fenced_binding(post_binding, held)
        listener = ExtenderListener(address, calls, settings.SCHEDVIEW_EXTENDER_TIMEOUT,
                                    post_binding=post_binding, tls=tls,
                                    inherited_fd=settings.SCHEDVIEW_EXTENDER_FD)
    except OSError as exc:
        log.error("cannot serve kube-scheduler's extender on SCHEDVIEW_EXTENDER_ADDRESS=%s: "
                  "%s; trying again in %g s", address, exc, LISTEN_RETRY)
        if refused is not None:
            refused(f"cannot listen on {address}: {exc}")
        return None
    log.info("serving kube-scheduler's extender at %s", listener.url)
    return listener.start()


def step(owner: CacheOwner, deadlines: dict, lease=None, clock=time.time,
         calls: OwnerCalls = None) -> bool:
    """One turn of the loop; returns whether it found work.

    With `calls` (the listener's), kube-scheduler's calls come first and the feed is
    applied in chunks between them. While kube-scheduler is calling, an idle owner waits
    on the calls, and looks at Redis's commands when kube-scheduler pauses (IDLE_WAIT)
    or every COMMAND_PERIOD, not every turn: each look's round trip would hold a waiting
    filter, and Redis's slow moments would make the filter's p99. Otherwise it waits on
    Redis, as without calls.

    With a `lease` (LeaderLease) no longer held, it only applies the feed (`in_doubt`);
    lost, or a write refused as stale, it raises LeadershipLost. While Redis is
    unreachable, the owner's tries at it are spaced by its backoff, and it waits on the
    feed instead."""
    if lease is not None and lease.lost.is_set():
        raise LeadershipLost("the leader lease was lost to another owner; standing by")
    if owner.writer is not None and owner.writer.stale:
        raise LeadershipLost("another owner took the lease (a write was refused under this "
                             "owner's term); standing by")
    if lease is not None and not lease.held():
        return in_doubt(owner)
    redis = owner.redis_backoff
    served = calls.serve() if calls is not None else 0
    now = clock()
    if served:
        deadlines["calling"] = now + CALLING
    applied = owner.drain_feed(limit=FEED_CHUNK if calls is not None else 5000)
    if now < deadlines.get("calling", 0.0):
        if now >= deadlines.get("commands", 0.0):
            served += redis.attempt(owner.commands.serve, timeout=0)[1] or 0
            deadlines["commands"] = now + COMMAND_PERIOD
        if not (applied or served) and not calls.wait(IDLE_WAIT):
            deadlines["commands"] = 0.0     # kube-scheduler paused: Redis's turn
    else:
        tried, taken = redis.attempt(owner.commands.serve, timeout=0 if applied else IDLE_WAIT)
        served += taken or 0
        if not (tried or applied):
            applied = owner.drain_feed(wait=IDLE_WAIT)
    now = clock()
    if now >= deadlines["flush"]:
        owner.flush(calling=now < deadlines.get("calling", 0.0))
        deadlines["flush"] = now + FLUSH_PERIOD
    if now >= deadlines["snapshot"]:
        owner.take_snapshot()
        deadlines["snapshot"] = now + SNAPSHOT_PERIOD
    if now >= deadlines.get("binds", 0.0):
        owner.forget_overdue_binds(now)
        deadlines["binds"] = now + DEADLINE_PERIOD
    return bool(applied or served)


def in_doubt(owner: CacheOwner) -> bool:
    """A turn while the lease may have passed to another owner (not renewed within its
    deadline): the cache keeps up with the watch, and nothing is acted on (no calls, no
    commands, no binds, no flushes: the transitions wait, in order, in the owner, and
    the first flush after the lease is back writes and publishes them all)."""
    return bool(owner.drain_feed(wait=IDLE_WAIT))


class SchedulerDoor:
    """The owner's extender listener, opened by the owner's thread and closed by whichever
    thread first finds the lease in doubt (the renewal's, even while the owner's thread is
    busy), so the port is free for the next leader at once."""

    def __init__(self, calls: OwnerCalls, held=None):
        self.calls = calls
        self.held = held        # the lease's held(), which fences the listener's binds
        self._listener = None
        self._open_at = 0.0
        self._lock = threading.Lock()
        # Why a leader is not serving kube-scheduler ("" while it is, or is not meant to):
        # its health says so (a port still held by a frozen former leader, issue 22).
        self.refused = ""

    def open(self, now: float):
        """Listen, unless listening already or a failed try was too recent."""
        with self._lock:
            if self._listener is None and now >= self._open_at:
                self._listener = listen_for_scheduler(self.calls, self.held, self._refuse)
                self._open_at = now + LISTEN_RETRY
                if self._listener is not None:
                    self.refused = ""

    def _refuse(self, why: str):
        self.refused = why

    def status(self) -> dict:
        return {"extender_refused": self.refused}

    def close(self, why: str = ""):
        with self._lock:
            listener, self._listener, self._open_at = self._listener, None, 0.0
            self.refused = ""
        if listener is not None:
            if why:
                log.warning("kube-scheduler's extender closed: %s", why)
            listener.close()


def heal(decoder: DecoderProcess, kind: str, keys) -> None:
    """A comparison's drift of one kind: the decoder fetches `keys` again, or relists the
    kind (None: drift_repair.repair_plan)."""
    if keys is None:
        decoder.views[kind].request_relist()
    else:
        decoder.repair(kind, keys)


def run(stop: threading.Event, redis, lease=None, clock=time.time, probes=None,
        dump_signal=None):
    """Own the cache until `stop` is set or the lease (a LeaderLease) is lost
    (LeadershipLost). Serves kube-scheduler only while it holds the lease. `probes` (the
    watch command's OwnerProbes) hears of the owner and of every turn of the loop;
    `dump_signal` (a DumpSignal) asks it to log the cache's summary."""
    tune_gc()
    tune_switching()
    writer = ProjectionWriter().start()
    owner = build_owner(redis, writer, clock, lease)
    if lease is not None:
        owner.note_leader(holder_name(lease.token))
    if probes is not None:
        probes.lead(owner)
    # The reflectors parse and digest in a process of their own: this one only applies.
    decoder = DecoderProcess(owner.feed.put, kube.core_api, kinds=(*KINDS, CLAIMS),
                             keep_annotations=(BIND_INFO_ANNOTATION,),
                             options={"watch_list": settings.SCHEDVIEW_WATCH_LIST,
                                      "silence": settings.SCHEDVIEW_WATCH_SILENCE}).start()
    reflectors = decoder.reflectors
    owner.status_parts.append(functools.partial(watch_silence, reflectors,
                                                settings.SCHEDVIEW_WATCH_SILENCE))
    owner.comparer.heal = functools.partial(heal, decoder)
    owner.comparer.lister = lambda: list_for_comparison(decoder, stop)
    log.info("owning the cache (sequence numbers continue from %d)", owner.seq_base)
    deadlines = {"flush": 0.0, "snapshot": 0.0}
    frozen = False
    # kube-scheduler's calls on the owner's own listener, which opens once the cache is synced.
    calls = (OwnerCalls(owner.scheduler_verbs, SCHEDULER,
                        seen=lambda uid: owner.watched_pod(uid) is not None,
                        unseen_wait=settings.SCHEDVIEW_EXTENDER_UNSEEN_WAIT)
             if settings.SCHEDVIEW_EXTENDER_ADDRESS else None)
    door = (SchedulerDoor(calls, lease.held if lease is not None else None)
            if calls is not None else None)
    if door is not None:
        owner.status_parts.append(door.status)
    if lease is not None and door is not None:
        # The lease is renewed from the moment it is taken (the watch command); from now
        # a doubt closes kube-scheduler's door at once, whatever this thread is doing.
        lease.on_doubt = functools.partial(door.close, IN_DOUBT)
    try:
        while not stop.is_set():
            step(owner, deadlines, lease, clock, calls)
            if probes is not None:
                probes.heartbeat.turned()
            if dump_signal is not None:
                dump_signal.serve(owner)
            if not frozen and all(owner.synced.values()) and owner.feed.empty():
                settle_heap()
                frozen = True
                log.info("synced: %d nodes, %d pods", owner.cache.node_count(),
                         owner.cache.pod_count())
            if door is not None:
                if lease is not None and not lease.held():
                    door.close(IN_DOUBT)
                elif frozen:
                    door.open(clock())
    finally:
        if door is not None:
            door.close()
        if calls is not None:
            calls.close()
        if lease is None or lease.held():
            owner.flush()       # never written past the lease: another owner may lead
        writer.close()
        if owner.publisher is not None:
            owner.publisher.close()
        decoder.stop()
    return owner
