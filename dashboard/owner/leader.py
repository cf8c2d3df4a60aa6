"""One cache owner per cluster: a lease in Redis that the leader extends.

The lease is redis-py's `Lock`: a key holding the leader's token, with a time to
live; it is set only when absent, and extended or released only while it still
holds our token, so an owner that stalled past its lease can never extend or drop
the next owner's.

Redis can be unreachable. The leader then cannot know whether its lease still
stands, so it counts the lease as running out a margin before the expiry
Redis applies, measured from when its last successful extend was sent: past that
it stops acting as leader (`held()` is False) before another owner could take the
lease. Once Redis answers it extends; if the lease expired meanwhile it takes it
again, but only when nobody held it in between (each taking bumps a term counter):
then its cache and its unwritten history are still the truth and it carries on.
Otherwise it has lost the lease for good and starts over as a standby.

A standby that met an outage waits a lease period of Redis answering before it
contends, so that a leader whose lease ran out during the outage takes it back
first (it tries again at least every second) instead of handing the cluster to an
owner that must list it from scratch.
"""
import logging
import time

from redis.exceptions import LockError, LockNotOwnedError

from dashboard.runtime.redis_outage import UNREACHABLE, RedisBackoff
from dashboard.wire.keys import OWNER_LEASE, lease_term
from dashboard.wire.lease import holder_name, lease_holder, lease_token

log = logging.getLogger(__name__)

LEASE = 5.0                             # seconds the lease lives without an extend
MARGIN = 1.0            # seconds before its expiry a leader steps down (a fifth of shorter leases)


class LeaderLease:
    def __init__(self, client, key=OWNER_LEASE, lease=LEASE, holder=None, clock=time.monotonic):
        self.client = client
        self.lease = lease
        self.clock = clock
        self.margin = min(MARGIN, lease / 5)
        self.token = lease_token(holder or "owner")
        self.lock = client.lock(key, timeout=lease, thread_local=False)
        self.term_key = lease_term(key)   # bumped by every owner that takes the lease
        self.term = None
        self._held_until = 0.0

    def held(self) -> bool:
        """Whether this owner may act as leader now."""
        return self.clock() < self._held_until

    def _granted(self, sent: float):
        self._held_until = sent + self.lease - self.margin

    def try_acquire(self) -> bool:
        """Take the lease if nobody holds it (raises redis's ConnectionError when unreachable)."""
        sent = self.clock()
        if not self.lock.acquire(blocking=False, token=self.token):
            return False
        self.term = int(self.client.incr(self.term_key))
        self._granted(sent)
        return True

    def renew(self) -> bool:
        """Extend the lease; False when it is lost for good (another owner leads or led).
        Raises redis's ConnectionError or TimeoutError while Redis is unreachable."""
        sent = self.clock()
        try:
            self.lock.extend(self.lease, replace_ttl=True)
        except LockNotOwnedError:
            if not self._retake():
                self._held_until = 0.0
                return False
        self._granted(sent)
        return True

    def _retake(self) -> bool:
        """Our lease expired (Redis was unreachable, or restarted without it): take it again
        only if nobody took it since."""
        if not self.lock.acquire(blocking=False, token=self.token):
            return False
        term = int(self.client.incr(self.term_key))
        if self.term is None or term != self.term + 1:
            log.warning("the leader lease expired and another owner led since (term %s -> %d)",
                        self.term, term)
            self.release()
            return False
        self.term = term
        log.warning("the leader lease expired while Redis was unreachable; taken again")
        return True

    def wait(self, stop, poll=0.5) -> bool:
        """As a standby: wait until we hold the lease (True) or `stop` is set (False),
        waiting out Redis outages."""
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
        contend_at = self.clock() + self.lease if mine else 0.0
        while not stop.is_set():
            pause = poll
            if backoff.ready():
                try:
                    if backoff.down:
                        self.client.ping()
                        contend_at = self.clock() + self.lease
                        backoff.succeeded()
                    if self.clock() >= contend_at and self.try_acquire():
                        return True
                except UNREACHABLE as error:
                    backoff.failed(error)
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
