"""Claim requests from the web to the pools process over Redis, and the pools' status back.

A caller (the REST view) RPUSHes

    {"id": "<hex>", "pool": "web", "options": {...}, "deadline": <epoch s>, "actor": "alice"}

to `schedview:pools:claims:<pool>` and BLPOPs `schedview:pools:reply:<id>` until the
deadline for `{"ok": true, "result": {...}}` or `{"ok": false, "status": ..., "error":
...}`. Backpressure is immediate: the caller refuses (429) when the pool's queue is
already at capacity by the last published status plus what waits in Redis, and the
pools process answers 429 at once when the scheduler's queue is full. The pools
process publishes every pool's status under STATUS_KEY (expiring, so a dead process
reads as "not running"). Replies and their TTL are shared with the owner's commands.
"""
import logging
import time
import uuid

import orjson
import redis

from dashboard.feed.commands import REPLY_GRACE, REPLY_TTL, redis_client
from warmpool import ClaimOptions, ClaimRequest, ClaimResult

log = logging.getLogger(__name__)

REQUESTS_PREFIX = "schedview:pools:claims:"
REPLY_PREFIX = "schedview:pools:reply:"
STATUS_KEY = "schedview:pools:status"
STATUS_TTL = 5.0        # seconds the published status stays without a refresh
RETRY_AFTER = 1         # seconds a refused caller should wait
MAX_TIMEOUT = 60.0      # seconds: the longest a claim may wait


class PoolsError(Exception):
    """A claim that did not get a pod: status (400, 404, 429, 502, 503, 504) and why."""

    def __init__(self, status: int, message: str, retry_after: int | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.retry_after = retry_after


def requests_key(pool: str) -> str:
    return REQUESTS_PREFIX + pool


def reply_key(request_id: str) -> str:
    return REPLY_PREFIX + request_id


def published_status(client) -> dict | None:
    """{"at": epoch seconds, "pools": {pool: status}} as last published; None if the pools
    process is not running. Raises redis's errors."""
    raw = client.get(STATUS_KEY)
    return orjson.loads(raw) if raw else None


def read_status(client=None) -> dict | None:
    """published_status, or None also when Redis is down."""
    try:
        return published_status(client or redis_client())
    except redis.RedisError:
        return None


# -- the web's side ---------------------------------------------------------------------

def request_claim(pool: str, options: dict, timeout: float, actor: str, client=None) -> dict:
    """Claim a pod of `pool`, waiting up to `timeout` seconds; the claim's result or
    PoolsError. `options` are ClaimOptions' fields; they are checked before anything queues."""
    if not 0 < timeout <= MAX_TIMEOUT:
        raise PoolsError(400, f"timeout must be more than 0 and at most {MAX_TIMEOUT:g} seconds")
    try:
        ClaimOptions(**options)
    except (TypeError, ValueError) as error:
        raise PoolsError(400, str(error)) from None
    client = client or redis_client()
    try:
        status = published_status(client)
    except redis.RedisError as error:
        raise PoolsError(503, f"cannot reach Redis: {error}") from None
    if status is None:
        raise PoolsError(503, "the pool scheduler (manage.py pools) is not running")
    current = status["pools"].get(pool)
    if current is None:
        raise PoolsError(404, f"no pool named {pool!r}")
    request_id = uuid.uuid4().hex
    message = {"id": request_id, "pool": pool, "options": options,
               "deadline": time.time() + timeout, "actor": actor}
    try:
        if client.llen(requests_key(pool)) + current["queue_length"] >= current["capacity"]:
            raise PoolsError(429, f"pool {pool!r} has {current['capacity']} claims waiting; "
                                  "try again later", RETRY_AFTER)
        client.rpush(requests_key(pool), orjson.dumps(message))
        popped = client.blpop([reply_key(request_id)], timeout=timeout + REPLY_GRACE)
    except redis.RedisError as error:
        raise PoolsError(503, f"cannot reach Redis: {error}") from None
    if popped is None:
        raise PoolsError(504, f"no idle pod of pool {pool!r} could be claimed within "
                              f"{timeout:g} s")
    reply = orjson.loads(popped[1])
    if reply["ok"]:
        return reply["result"]
    raise PoolsError(reply["status"], reply["error"], reply.get("retry_after"))


# -- the pools process's side -----------------------------------------------------------

def pod_summary(pod: dict) -> dict:
    """What a claimer needs of the claimed pod."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    return {"namespace": meta.get("namespace"), "name": meta.get("name"),
            "uid": meta.get("uid"), "resourceVersion": meta.get("resourceVersion"),
            "nodeName": spec.get("nodeName"), "labels": meta.get("labels") or {},
            "annotations": meta.get("annotations") or {},
            "images": {c.get("name"): c.get("image") for c in spec.get("containers") or ()}}


_FAILURE_STATUS = {"expired": 504, "hard": 502, "shutdown": 503}


def reply_body(result: ClaimResult) -> bytes:
    if result.ok:
        return orjson.dumps({"ok": True, "result": {
            "pod": pod_summary(result.pod), "latency_ms": round(result.latency * 1000, 3),
            "attempts": result.attempts}})
    body = {"ok": False, "status": _FAILURE_STATUS[result.outcome], "error": result.error}
    if result.outcome == "shutdown":
        body["retry_after"] = RETRY_AFTER
    return orjson.dumps(body)


class ClaimServer:
    """Takes claim requests off every known pool's list and enqueues them on its scheduler
    (`schedulers()`: pool -> PoolScheduler, read at each call, so new pools are served)."""

    def __init__(self, schedulers, client=None, clock=time.time):
        self.schedulers = schedulers
        self.client = client or redis_client()
        self.clock = clock

    def serve(self, timeout: float, limit: int = 500) -> int:
        """Wait up to `timeout` seconds for requests; enqueue what came; returns how many."""
        pools = self.schedulers()
        if not pools:
            return 0
        keys = [requests_key(pool) for pool in sorted(pools)]
        first = self.client.blpop(keys, timeout=timeout)
        if first is None:
            return 0
        taken = [(first[0].decode(), first[1])]
        for key in keys:
            more = self.client.lpop(key, limit) or ()
            taken.extend((key, raw) for raw in more)
        for key, raw in taken:
            self._enqueue(pools.get(key[len(REQUESTS_PREFIX):]), raw)
        return len(taken)

    def _enqueue(self, scheduler, raw: bytes) -> None:
        try:
            message = orjson.loads(raw)
            request_id = message["id"]
            if not isinstance(request_id, str) or not request_id:
                raise ValueError("no id")
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            log.error("dropped a malformed claim request: %r", raw[:200])
            return
        try:
            deadline = float(message["deadline"])
            options = ClaimOptions(**message["options"])
        except (KeyError, TypeError, ValueError) as error:
            self.reply(request_id, orjson.dumps({"ok": False, "status": 400,
                                                 "error": f"malformed claim request: {error}"}))
            return
        left = deadline - self.clock()
        if left <= 0:
            log.warning("dropped claim request %s: %.3f s past its deadline", request_id, -left)
            return
        request = ClaimRequest(options, scheduler.clock() + left,
                               lambda result: self.reply(request_id, reply_body(result)),
                               id=request_id)
        if not scheduler.enqueue(request):
            self.reply(request_id, orjson.dumps({
                "ok": False, "status": 429, "retry_after": RETRY_AFTER,
                "error": f"pool {scheduler.pool!r} has too many claims waiting; try again later"}))

    def reply(self, request_id: str, body: bytes) -> None:
        key = reply_key(request_id)
        pipe = self.client.pipeline(transaction=False)
        pipe.lpush(key, body)
        pipe.expire(key, REPLY_TTL)
        try:
            pipe.execute()
        except redis.RedisError as error:
            log.error("could not reply to claim request %s: %s", request_id, error)

    def publish_status(self, statuses: dict) -> None:
        body = orjson.dumps({"at": self.clock(), "pools": statuses})
        self.client.set(STATUS_KEY, body, px=int(STATUS_TTL * 1000))
