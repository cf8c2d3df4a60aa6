"""One cache owner per cluster: a lease in Redis that the leader renews, and its term.

The lease is redis-py's `Lock`: a key holding the leader's token, living
SCHEDVIEW_LEASE_DURATION seconds without a renewal; it is set only when absent, and
extended or released only while it still holds our token, so an owner that stalled
past its lease can never extend or drop the next owner's. Durations are client-go's
leader election's: the leader renews every retry period on a thread of its own (the
owner's work, however long, cannot starve it), and stops acting as leader (`held()`
False) once it has not renewed for the renew deadline, which ends well before the
lease: before another owner could take it.

Every taking bumps the lease's term in the database (fence.py), the fencing token
every write and publish of the owner carries: a stalled owner that wakes finds its
writes refused, however the lease looked to it. Redis can be unreachable or restart
empty. Once it answers the leader renews; if the lease vanished meanwhile it takes it
again, but only when the database's term is still its own, proof that nobody took the
lease in between: then its cache and its unwritten history are still the truth and it
carries on under the same term. Otherwise it has lost the lease for good (`lost`).

A standby that met an outage waits a lease period of Redis answering before it
contends, so that a leader whose lease ran out during the outage takes it back
first instead of handing the cluster to an owner that must list it from scratch; so
does a standby that finds the lease gone with its term (Redis emptied under a leader).
"""
import logging
import threading
import time

from django.conf import settings
from django.db import DatabaseError, connections
from redis.exceptions import LockError, LockNotOwnedError

from dashboard.models import LeaseTerm
from dashboard.owner.fence import RedisFence, take_term
from dashboard.runtime.db_deadline import bounded
from dashboard.runtime.redis_outage import UNREACHABLE, RedisBackoff
from dashboard.wire.keys import OWNER_LEASE, lease_term
from dashboard.wire.lease import holder_name, lease_holder, lease_token

log = logging.getLogger(__name__)


class LeaderLease:
    def __init__(self, client, key=OWNER_LEASE, *, duration=None, renew_deadline=None,
                 retry=None, holder=None, clock=time.monotonic):
        self.client = client
        self.duration = duration or settings.SCHEDVIEW_LEASE_DURATION
        self.renew_deadline = renew_deadline or settings.SCHEDVIEW_LEASE_RENEW_DEADLINE
        self.retry = retry or settings.SCHEDVIEW_LEASE_RETRY_PERIOD
        self.clock = clock
        self.token = lease_token(holder or "owner")
        self.lock = client.lock(key, timeout=self.duration, thread_local=False)
        self.term_key = lease_term(key)
        self.fence = RedisFence(client, key, self.term_key)
        self.term = None
        self.lost = threading.Event()     # another owner took the lease: stand by
        self._held_until = 0.0
        self._renewing = None             # (thread, its stop event) while renewing
        self.on_doubt = lambda: None      # what the renewal thread calls when it doubts

    def _term_deadline(self) -> float:
        """How long the database may take to give the term: half the renew deadline, so a
        database that answers nothing (issue 22) leaves time to give the lease back."""
        return self.renew_deadline / 2

    def held(self) -> bool:
        """Whether this owner may act as leader now."""
        return not self.lost.is_set() and self.clock() < self._held_until

    def _granted(self, sent: float):
        self._held_until = sent + self.renew_deadline

    def try_acquire(self) -> bool:
        """Take the lease if nobody holds it, under a new term. Raises redis's
        ConnectionError when Redis is unreachable, and the database's errors (the lease
        given back) when the term cannot be taken."""
        sent = self.clock()
        if not self.lock.acquire(blocking=False, token=self.token):
            return False
        try:
            with bounded(connections["default"], self._term_deadline()):
                term = take_term()
        except DatabaseError:
            self.release()
            raise
        if not self.fence.mirror(self.token, term):
            return False        # the lease passed on meanwhile (it outlived our taking)
        self.term = term
        self.lost.clear()
        self._granted(sent)
        return True

    def renew(self) -> bool:
        """Extend the lease; False when it is lost for good (another owner leads or led).
        Raises redis's ConnectionError or TimeoutError while Redis is unreachable, and the
        database's errors while the term cannot be read to take the lease back."""
        sent = self.clock()
        try:
            self.lock.extend(self.duration, replace_ttl=True)
            # Redis's copy of the term again, in case a retake's was cut off by an outage:
            # the fenced writes there wait for it.
            self.fence.mirror(self.token, self.term)
        except LockNotOwnedError:
            if not self._retake():
                self._held_until = 0.0
                self.lost.set()
                return False
        self._granted(sent)
        return True

    def _retake(self) -> bool:
        """Our lease vanished (it expired while Redis was unreachable, or Redis restarted
        empty): take it again only if the database's term is still ours."""
        if not self.lock.acquire(blocking=False, token=self.token):
            return False
        try:
            with bounded(connections["default"], self._term_deadline()):
                term = LeaseTerm.current()
        except DatabaseError:
            self.release()      # unproven: another owner may have it meanwhile
            raise
        if term != self.term or not self.fence.mirror(self.token, term):
            log.warning("the leader lease expired and another owner led since (term %s -> %d)",
                        self.term, term)
            self.release()
            return False
        log.warning("the leader lease vanished from Redis; nobody led since (term %d): "
                    "taken again", term)
        return True

    def start_renewing(self, on_doubt=None):
        """Renew every retry period from a thread of its own. `on_doubt()` runs there when
        the lease stops being held (not renewed within the deadline, or lost): the owner
        closes kube-scheduler's door then, whatever its own thread is doing. The owner
        may set `on_doubt` later: renewal starts as the lease is taken, the door opens
        once the owner is built."""
        stop = threading.Event()
        self.on_doubt = on_doubt or (lambda: None)
        thread = threading.Thread(target=self._keep, args=(stop,),
                                  name="lease-renewal", daemon=True)
        self._renewing = (thread, stop)
        thread.start()

    def stop_renewing(self):
        if self._renewing is not None:
            thread, stop = self._renewing
            stop.set()
            thread.join()
            self._renewing = None

    def _keep(self, stop):
        backoff = RedisBackoff("leader lease", cap=self.retry, clock=self.clock)
        doubted = False
        try:
            while not stop.wait(self.retry):
                try:
                    tried, renewed = backoff.attempt(self.renew)
                except DatabaseError as error:
                    log.warning("cannot read the lease's term to take it back: %s", error)
                    connections["default"].close()   # reopened by the next try
                    tried, renewed = False, None
                if not self.held():
                    if not doubted:
                        doubted = True
                        self.on_doubt()     # read now: the owner sets it once it has a door
                    if tried and not renewed:
                        return      # lost for good
                else:
                    doubted = False
        finally:
            connections.close_all()

    def wait(self, stop, poll=0.5) -> bool:
        """As a standby: wait until we hold the lease (True) or `stop` is set (False),
        waiting out Redis outages and database failures."""
        backoff = RedisBackoff("standby", clock=self.clock)
        # An owner restarted while its dead self still holds the lease lets the standby
        # that was already waiting take over first: it contends a lease period later
        # (otherwise the two race for the lease as it expires). After an outage,
        # likewise: a lease period after Redis answered again.
        try:
            held_by = self.holder() or ""
        except UNREACHABLE:
            held_by = ""
        mine = held_by and holder_name(held_by) == holder_name(self.token)
        contend_at = self.clock() + self.duration if mine else 0.0
        seen_held = False       # whether another owner held the lease at our last try
        while not stop.is_set():
            pause = poll
            if backoff.ready():
                try:
                    if backoff.down:
                        self.client.ping()
                        contend_at = self.clock() + self.duration
                        backoff.succeeded()
                    if self.clock() < contend_at:
                        pass
                    elif seen_held and not self.client.exists(self.term_key):
                        # The lease went with its term: Redis was emptied (FLUSHDB, a
                        # restart without its data) under a leader, which takes its lease
                        # back at its next renewal; no expiry or release takes the term.
                        log.warning("the leader lease vanished with its term (Redis was "
                                    "emptied); contending in %g s", self.duration)
                        contend_at, seen_held = self.clock() + self.duration, False
                    elif self.try_acquire():
                        return True
                    else:
                        seen_held = True
                except UNREACHABLE as error:
                    backoff.failed(error)
                except DatabaseError as error:
                    # The lease was given back; a standby with a working database takes it.
                    log.warning("cannot take the lease's term: %s; trying again in %g s",
                                error, self.duration)
                    connections["default"].close()
                    contend_at = self.clock() + self.duration
            if backoff.down:
                pause = min(poll, 0.1)
            stop.wait(pause)
        return False

    def release(self):
        """Give the lease up, if we still hold it (nothing to do when Redis is unreachable:
        it expires by itself)."""
        self._held_until = 0.0
        try:
            self.lock.release()
        except LockError:
            pass            # it had expired, or another owner holds it now
        except UNREACHABLE as error:
            log.warning("could not release the leader lease (%s); it expires by itself", error)

    def holder(self):
        return lease_holder(self.client, self.lock.name)
