"""Claim requests from the web to the pools process over Redis, and the pools' status back.

The claims are dashboard.wire.pools' on dashboard.wire.requests' protocol; here the web's asking and the
pools process's serving. Backpressure is immediate: the caller refuses (429) when
the pool's queue is already at capacity by the last published status plus what waits
in Redis, and the pools process answers 429 at once when the scheduler's queue is full.
"""
import time

import redis
from django.conf import settings

from warmpool import ClaimRequest

from dashboard.wire.clients import redis_client
from dashboard.wire.keys import POOLS_CLAIMS_PREFIX, POOLS_REPLY_PREFIX, pool_claims
from dashboard.wire.pools import (
    MAX_TIMEOUT,
    RETRY_AFTER,
    Claim,
    claim_reply,
    publish_status,
    published_status,
    queue_full,
)
from dashboard.wire.requests import MalformedMessage, NoReply, Reply, RequestClient, RequestServer


class PoolsError(Exception):
    """A claim that did not get a pod: status (400, 404, 429, 502, 503, 504) and why."""

    def __init__(self, status: int, message: str, retry_after: int | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.retry_after = retry_after


def read_status(client=None) -> dict | None:
    """dashboard.wire.pools.published_status, or None also when Redis is down."""
    try:
        return published_status(client or redis_client(settings.REDIS_URL))
    except redis.RedisError:
        return None


# -- the web's side ---------------------------------------------------------------------

def request_claim(pool: str, options: dict, timeout: float, actor: str, client=None) -> dict:
    """Claim a pod of `pool`, waiting up to `timeout` seconds; the claim's result or
    PoolsError. `options` are ClaimOptions' fields; they are checked before anything queues."""
    if not 0 < timeout <= MAX_TIMEOUT:
        raise PoolsError(400, f"timeout must be more than 0 and at most {MAX_TIMEOUT:g} seconds")
    try:
        claim = Claim.of(pool, options, actor)
    except ValueError as error:
        raise PoolsError(400, str(error)) from None
    client = client or redis_client(settings.REDIS_URL)
    try:
        status = published_status(client)
    except redis.RedisError as error:
        raise PoolsError(503, f"cannot reach Redis: {error}") from None
    if status is None:
        raise PoolsError(503, "the pool scheduler (manage.py pools) is not running")
    current = status["pools"].get(pool)
    if current is None:
        raise PoolsError(404, f"no pool named {pool!r}")
    try:
        if client.llen(pool_claims(pool)) + current["queue_length"] >= current["capacity"]:
            raise PoolsError(429, f"pool {pool!r} has {current['capacity']} claims waiting; "
                                  "try again later", RETRY_AFTER)
        reply = RequestClient(client, POOLS_REPLY_PREFIX).ask(pool_claims(pool), claim.body(),
                                                               timeout)
    except redis.RedisError as error:
        raise PoolsError(503, f"cannot reach Redis: {error}") from None
    except NoReply:
        raise PoolsError(504, f"no idle pod of pool {pool!r} could be claimed within "
                              f"{timeout:g} s") from None
    except MalformedMessage as error:
        raise PoolsError(502, f"from the pools process: {error}") from None
    if reply.ok:
        return reply.result
    raise PoolsError(reply.status, reply.error, reply.retry_after)


# -- the pools process's side -----------------------------------------------------------

class ClaimServer:
    """Takes claim requests off every known pool's list and enqueues them on its scheduler
    (`schedulers()`: pool -> PoolScheduler, read at each call, so new pools are served)."""

    def __init__(self, schedulers, client=None, clock=time.time):
        self.schedulers = schedulers
        self.client = client or redis_client(settings.REDIS_URL)
        self.clock = clock
        self.requests = RequestServer(self.client, POOLS_REPLY_PREFIX, what="claim request",
                                      parse=Claim.from_request, handle=self._enqueue,
                                      clock=clock)
        self._pools = {}

    def serve(self, timeout: float, limit: int = 500) -> int:
        """Wait up to `timeout` seconds for requests; enqueue what came (up to `limit` of
        each pool); returns how many."""
        self._pools = self.schedulers()
        if not self._pools:
            return 0
        return self.requests.serve([pool_claims(pool) for pool in sorted(self._pools)],
                                   timeout, limit)

    def _enqueue(self, queue: str, request, claim: Claim):
        """A claim on its pool's scheduler (answered once it ends), or a refusal now."""
        pool = queue[len(POOLS_CLAIMS_PREFIX):]
        if claim.pool != pool:
            return Reply.refusal(400, f"a claim of pool {claim.pool!r} on pool {pool!r}'s list")
        scheduler = self._pools[pool]
        left = request.deadline - self.clock()
        claimed = ClaimRequest(claim.options, scheduler.clock() + left,
                               lambda result: self.requests.reply(request.id,
                                                                  claim_reply(result)),
                               id=request.id)
        if not scheduler.enqueue(claimed):
            return queue_full(scheduler.pool)
        return None

    def publish_status(self, statuses: dict) -> None:
        publish_status(self.client, statuses, self.clock())
