"""Commands to the cache owner over Redis: any process asks, the owner alone applies.

A caller RPUSHes one JSON message to COMMANDS_KEY,

    {"id": "<hex>", "op": "assume", "args": {...}, "actor": "alice",
     "deadline": 1718000000.5, "reply": true}

and BLPOPs `schedview:owner:reply:<id>` for `{"ok": true, "result": ...}` or
`{"ok": false, "status": 409, "error": "..."}`. The owner (CommandServer.serve)
takes queued commands in batches, runs each handler, and pushes every reply of a
batch in one pipeline.

Deadlines: a command carries the wall-clock time after which it must not run
(a stale "assume" applied late would be wrong), and the owner drops it unanswered.
A waiting sender gives up `timeout` seconds after sending, plus a short grace so
that a command the owner started just before its deadline is still answered.
`wait=False` senders get no reply (`"reply": false`); with `timeout=None` their
command has no deadline at all: it stays queued in Redis, whatever happens to the
owner, until an owner serves it (tasks send finish_binding and forget that way).
"""
import logging
import os
import time
import uuid
from typing import Callable

import orjson
import redis
from redis.backoff import ExponentialWithJitterBackoff
from redis.retry import Retry
from django.conf import settings

from dashboard.redis_outage import UNREACHABLE

log = logging.getLogger(__name__)

COMMANDS_KEY = "schedview:owner:commands"
STATUS_KEY = "schedview:owner:status"   # the leading owner's counters, for the pages (JSON)
REPLY_PREFIX = "schedview:owner:reply:"
REPLY_TTL = 60          # seconds a reply waits for its sender before Redis drops it
REPLY_GRACE = 0.25      # seconds a sender keeps waiting past its command's deadline

_FIELDS = ("id", "op", "args", "actor", "deadline")


class CommandError(Exception):
    """The owner refused a command (400, 404, 409) or failed on it (500), or is gone (503)."""

    def __init__(self, status: int, message: str):
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


class OwnerUnavailable(CommandError):
    """No reply before the timeout: no owner, a busy owner, or no Redis."""

    def __init__(self, message: str = "the cache owner did not answer in time"):
        super().__init__(503, message)


def reply_key(command_id: str) -> str:
    return REPLY_PREFIX + command_id


_clients: dict = {}


def redis_client() -> redis.Redis:
    """A client for settings.REDIS_URL (redis:// or unix://), one per process and URL.

    redis-py clients are thread-safe (a connection pool) and notice a fork
    themselves, so sharing one per process is safe for threads and workers.
    """
    key = (os.getpid(), settings.REDIS_URL)
    client = _clients.get(key)
    if client is None:
        # A few quick retries for a dropped connection (Redis restarted), not redis-py's
        # default ten with pauses up to a second: a page must say "Redis is down" promptly.
        client = _clients[key] = redis.Redis.from_url(
            settings.REDIS_URL, socket_connect_timeout=5,
            retry=Retry(ExponentialWithJitterBackoff(cap=0.2, base=0.02), retries=2))
    return client


def message(op: str, args: dict | None = None, *, actor: str = "system",
            timeout: float | None = 5.0, reply: bool = True, clock=time.time) -> dict:
    """The message `send` queues (useful to queue several in one RPUSH: send_many)."""
    return {"id": uuid.uuid4().hex, "op": op, "args": args or {}, "actor": actor,
            "deadline": None if timeout is None else clock() + timeout, "reply": reply}


def send(op: str, args: dict | None = None, *, actor: str = "system",
         timeout: float | None = 5.0, wait: bool = True, client=None):
    """Queue a command for the owner; when `wait`, return its result or raise CommandError.

    The command must run within `timeout` seconds or never. Without `wait` the
    owner sends no reply and this returns the command's id; `timeout=None` (only
    without `wait`) queues it with no deadline, so it survives an owner failover.
    Raises OwnerUnavailable (503) when no reply comes in time or Redis is down.
    """
    if wait and (timeout is None or timeout <= 0):
        raise ValueError("a waiting send needs a positive timeout")
    client = client or redis_client()
    msg = message(op, args, actor=actor, timeout=timeout, reply=wait)
    try:
        if not wait:
            client.rpush(COMMANDS_KEY, orjson.dumps(msg))
            return msg["id"]
        client.rpush(COMMANDS_KEY, orjson.dumps(msg))
        popped = client.blpop([reply_key(msg["id"])], timeout=timeout + REPLY_GRACE)
    except redis.RedisError as e:
        raise unanswered(client, op, timeout, e) from e
    if popped is None:
        raise unanswered(client, op, timeout)
    return _result(popped[1])


def unanswered(client, op: str, timeout: float, error: Exception = None) -> OwnerUnavailable:
    """Why a command got no reply, naming the cause rather than the symptom: Redis down
    (it does not answer a PING either), no owner leading (none publishes its status),
    or a leading owner too busy to answer in time."""
    try:
        client.ping()
        leading = client.exists(STATUS_KEY)
    except redis.RedisError as down:
        return OwnerUnavailable(f"cannot reach Redis: {down}")
    if error is not None:
        return OwnerUnavailable(f"Redis failed on {op!r}: {error}")
    return OwnerUnavailable(
        f"the cache owner did not answer {op!r} within {timeout:g}s: "
        + ("it leads, but is busy" if leading
           else "no cache owner is leading (is `manage.py watch` running?)"))


def send_many(commands: list, *, actor: str = "system", timeout: float | None = 5.0,
              wait: bool = True, client=None) -> list:
    """Queue several (op, args) commands in one RPUSH; the owner serves them in order.

    When `wait`, returns one entry per command: its result, or the CommandError
    it raised (not raised: the others may have succeeded). Otherwise returns the ids.
    """
    if wait and (timeout is None or timeout <= 0):
        raise ValueError("a waiting send needs a positive timeout")
    if not commands:
        return []
    client = client or redis_client()
    msgs = [message(op, args, actor=actor, timeout=timeout, reply=wait) for op, args in commands]
    try:
        client.rpush(COMMANDS_KEY, *(orjson.dumps(m) for m in msgs))
        if not wait:
            return [m["id"] for m in msgs]
        end = time.monotonic() + timeout + REPLY_GRACE
        results = []
        for m in msgs:
            left = end - time.monotonic()
            popped = client.blpop([reply_key(m["id"])], timeout=max(left, 0.01))
            if popped is None:
                results.append(unanswered(client, m["op"], timeout))
                continue
            try:
                results.append(_result(popped[1]))
            except CommandError as e:
                results.append(e)
        return results
    except redis.RedisError as e:
        raise unanswered(client, msgs[0]["op"], timeout, e) from e


def _result(raw: bytes):
    try:
        reply = orjson.loads(raw)
        if reply.get("ok"):
            return reply.get("result")
        status, error = int(reply.get("status", 500)), str(reply.get("error", ""))
    except (orjson.JSONDecodeError, AttributeError, TypeError, ValueError):
        raise CommandError(500, f"malformed reply from the cache owner: {raw[:200]!r}") from None
    if status == 503:
        raise OwnerUnavailable(error)
    raise CommandError(status, error)


class CommandServer:
    """The owner's side: run queued commands through `handlers` and answer them.

    handlers: op -> handler(args, actor); the return value (JSON-serializable) is
    the result; raising CommandError refuses with its status; anything else is a 500.
    """

    def __init__(self, handlers: dict[str, Callable[[dict, str], object]], client=None,
                 clock=time.time):
        self.handlers = handlers
        self.client = client
        self.clock = clock

    def serve(self, timeout: float, limit: int = 1000) -> int:
        """Wait up to `timeout` seconds for a command, then take up to `limit` queued ones
        without blocking, run and answer them; returns how many were taken off the list.
        Raises redis's ConnectionError or TimeoutError when Redis fails it; a command
        already taken off the list then still runs (unanswered)."""
        client = self.client or redis_client()
        lost = None     # Redis failing after a command was taken: that command still runs
        if timeout > 0:
            first = client.blpop([COMMANDS_KEY], timeout=timeout)
            if first is None:
                return 0
            raws = [first[1]]
            if limit > 1:
                try:
                    raws.extend(client.lpop(COMMANDS_KEY, limit - 1) or ())
                except UNREACHABLE as error:
                    lost = error
        else:
            raws = client.lpop(COMMANDS_KEY, limit) or []
        replies = []
        for raw in raws:
            answer = self._run(raw)
            if answer is not None:
                replies.append(answer)
        if replies and lost is None:
            pipe = client.pipeline(transaction=False)
            for command_id, body in replies:
                key = reply_key(command_id)
                pipe.lpush(key, body)
                pipe.expire(key, REPLY_TTL)
            pipe.execute()
        if lost is not None:
            raise lost
        return len(raws)

    def _run(self, raw: bytes):
        """(id, reply JSON) to push, or None (no reply wanted, or nobody to reply to)."""
        try:
            msg = orjson.loads(raw)
        except orjson.JSONDecodeError:
            log.error("dropped a malformed command (not JSON): %r", raw[:200])
            return None
        command_id = msg.get("id") if isinstance(msg, dict) else None
        if not isinstance(command_id, str) or not command_id:
            log.error("dropped a malformed command (no id): %r", raw[:200])
            return None
        wants_reply = msg.get("reply", True) is not False
        problem = _malformed(msg)
        if problem:
            log.error("refused malformed command %s: %s", command_id, problem)
            return _answer(command_id, wants_reply, False, 400, f"malformed command: {problem}")
        op, args, actor, deadline = msg["op"], msg["args"], msg["actor"], msg["deadline"]
        if deadline is not None and self.clock() > deadline:
            log.warning("dropped command %s (%s by %s): %.3fs past its deadline", command_id,
                        op, actor, self.clock() - deadline)
            return None
        try:
            result = run_handler(self.handlers, op, args, actor, f"command {command_id}")
        except CommandError as e:
            return _answer(command_id, wants_reply, False, e.status, e.message)
        return _answer(command_id, wants_reply, True, result=result)


def run_handler(handlers: dict, op: str, args: dict, actor: str, what: str):
    """The result of `op`'s handler: its CommandError as raised, a 400 for an unknown op,
    a 500 (logged as `what`) for anything else it raised. Commands over Redis and the
    owner listener's calls are answered alike."""
    handler = handlers.get(op)
    if handler is None:
        raise CommandError(400, f"unknown op {op!r}")
    try:
        return handler(args, actor)
    except CommandError:
        raise
    except Exception as e:
        log.exception("%s (%s by %s) failed", what, op, actor)
        raise CommandError(500, f"{type(e).__name__}: {e}") from None


def _malformed(msg: dict) -> str:
    missing = [f for f in _FIELDS if f not in msg]
    if missing:
        return "missing " + ", ".join(missing)
    if not isinstance(msg["op"], str):
        return "op is not a string"
    if not isinstance(msg["args"], dict):
        return "args is not an object"
    if not isinstance(msg["actor"], str):
        return "actor is not a string"
    deadline = msg["deadline"]
    if deadline is not None and (isinstance(deadline, bool)
                                 or not isinstance(deadline, (int, float))):
        return "deadline is not a number"
    return ""


def _answer(command_id, wants_reply, ok, status=None, error=None, result=None):
    if not wants_reply:
        if not ok:
            log.warning("command %s (no reply wanted) refused: %s %s", command_id, status, error)
        return None
    if ok:
        try:
            return command_id, orjson.dumps({"ok": True, "result": result})
        except TypeError as e:
            log.error("command %s: result is not JSON: %s", command_id, e)
            status, error = 500, f"result is not JSON: {e}"
    return command_id, orjson.dumps({"ok": False, "status": status, "error": error})
