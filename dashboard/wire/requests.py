"""One request/reply protocol over Redis lists, for every process that asks another.

A caller RPUSHes a request, one JSON object,

    {"id": "<hex>", ...the protocol's fields..., "deadline": <epoch s> | null,
     "reply": true}

to the server's queue (a list) and, when it wants the reply, BLPOPs the list
`<reply prefix><id>` for

    {"ok": true, "result": ...}   or   {"ok": false, "status": 409, "error": "..."}

(a refusal may add "retry_after": seconds). The server takes queued requests in
batches and pushes the replies of a batch in one step (a pipeline; a fenced server's
script, which may withhold them), each list expiring REPLY_TTL seconds later so that a
reply whose caller gave up does not stay.

Deadlines: a request carries the wall-clock time after which it must not run (a
stale request applied late would be wrong), and the server drops it unanswered. A
waiting caller gives up REPLY_GRACE seconds after that, so that a request the server
started just before its deadline is still answered. A request with `"reply": false`
gets no reply; one without a deadline stays queued, whatever happens to the servers
meanwhile, until a server takes it.
"""
import logging
import time
import uuid
from dataclasses import dataclass
from typing import Callable

import orjson
import redis

from dashboard.wire.clients import UNREACHABLE

log = logging.getLogger(__name__)

REPLY_TTL = 60          # seconds a reply waits for its caller before Redis drops it
REPLY_GRACE = 0.25      # seconds a caller keeps waiting past its request's deadline

_MISSING = object()
_TYPE_NAMES = {str: "a string", dict: "an object", list: "a list", int: "an integer"}


class MalformedMessage(ValueError):
    """A request or reply that has not the protocol's shape. For a request whose id could
    be read, `request_id` and `wants_reply` say where to send the refusal."""

    def __init__(self, problem: str, request_id: str | None = None, wants_reply: bool = False):
        super().__init__(problem)
        self.request_id = request_id
        self.wants_reply = wants_reply


class NoReply(Exception):
    """No reply came before the request's deadline and its grace."""


def require_fields(body: dict, shape: dict) -> None:
    """Raise MalformedMessage naming the fields of `shape` (name -> type) that `body` lacks,
    or the first whose value has another type."""
    for name, kind in shape.items():
        if not isinstance(body.get(name, _MISSING), kind):
            break
    else:
        return
    missing = [name for name in shape if name not in body]
    if missing:
        raise MalformedMessage("missing " + ", ".join(missing))
    for name, kind in shape.items():
        if not isinstance(body[name], kind):
            raise MalformedMessage(f"{name} is not {_TYPE_NAMES.get(kind, kind.__name__)}")


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# Messages are slotted dataclasses, not frozen ones: the owner's thread builds two per
# command, and a frozen dataclass's __init__ costs four times as much.
@dataclass(slots=True)
class Request:
    id: str
    deadline: float | None   # wall-clock seconds after which it must not run; None: never
    body: dict               # the protocol's fields
    reply: bool = True       # whether its caller waits for a reply

    @classmethod
    def new(cls, body: dict, *, timeout: float | None, reply: bool = True,
            clock=time.time) -> "Request":
        """A request that must run within `timeout` seconds (None: whenever it is taken)."""
        return cls(uuid.uuid4().hex, None if timeout is None else clock() + timeout, body,
                   reply)

    def to_json(self) -> bytes:
        return orjson.dumps({"id": self.id, **self.body, "deadline": self.deadline,
                             "reply": self.reply})

    @classmethod
    def from_json(cls, raw: bytes) -> "Request":
        try:
            message = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise MalformedMessage("not JSON") from None
        if not isinstance(message, dict):
            raise MalformedMessage("not a JSON object")
        # what is left of the message once the envelope is taken off is the body
        request_id = message.pop("id", None)
        if not isinstance(request_id, str) or not request_id:
            raise MalformedMessage("no id")
        wants_reply = message.pop("reply", True) is not False
        deadline = message.pop("deadline", _MISSING)
        if deadline is _MISSING:
            raise MalformedMessage("missing deadline", request_id, wants_reply)
        if deadline is not None and not _is_number(deadline):
            raise MalformedMessage("deadline is not a number", request_id, wants_reply)
        return cls(request_id, deadline, message, wants_reply)

    def late(self, now: float) -> float:
        """Seconds past its deadline at `now` (0 or less: still in time)."""
        return 0.0 if self.deadline is None else now - self.deadline


@dataclass(slots=True)
class Reply:
    ok: bool
    result: object = None
    status: int | None = None        # a refusal's, HTTP-like (400, 404, 409, 429, 503, ...)
    error: str = ""
    retry_after: int | None = None   # seconds a refused caller should wait before again

    @classmethod
    def success(cls, result) -> "Reply":
        return cls(True, result)

    @classmethod
    def refusal(cls, status: int, error: str, retry_after: int | None = None) -> "Reply":
        return cls(False, status=status, error=error, retry_after=retry_after)

    def to_json(self) -> bytes:
        """The reply's JSON; raises TypeError when the result is not JSON-serializable."""
        if self.ok:
            return orjson.dumps({"ok": True, "result": self.result})
        body = {"ok": False, "status": self.status, "error": self.error}
        if self.retry_after is not None:
            body["retry_after"] = self.retry_after
        return orjson.dumps(body)

    @classmethod
    def from_json(cls, raw: bytes) -> "Reply":
        try:
            message = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise MalformedMessage(f"malformed reply (not JSON): {raw[:200]!r}") from None
        if not isinstance(message, dict) or not isinstance(message.get("ok"), bool):
            raise MalformedMessage(f"malformed reply (no ok): {raw[:200]!r}")
        if message["ok"]:
            return cls.success(message.get("result"))
        status, retry_after = message.get("status", 500), message.get("retry_after")
        error = message.get("error", "")
        if (not isinstance(status, int) or isinstance(status, bool) or not isinstance(error, str)
                or not (retry_after is None or _is_number(retry_after))):
            raise MalformedMessage(f"malformed reply (status, error): {raw[:200]!r}")
        return cls.refusal(status, error, retry_after)


class RequestClient:
    """The asking side of one protocol (its replies' key prefix), on a redis-py client.
    Redis's errors are raised as they come: the protocol's layer says what they mean."""

    def __init__(self, client: redis.Redis, reply_prefix: str, clock=time.time):
        self.client = client
        self.reply_prefix = reply_prefix
        self.clock = clock

    def ask(self, queue: str, body: dict, timeout: float) -> Reply:
        """Queue a request that must run within `timeout` seconds or never, and return its
        reply. Raises NoReply when none came in time, MalformedMessage for one unreadable."""
        _positive(timeout)
        request = Request.new(body, timeout=timeout, clock=self.clock)
        self.client.rpush(queue, request.to_json())
        popped = self.client.blpop([self.reply_prefix + request.id],
                                   timeout=timeout + REPLY_GRACE)
        if popped is None:
            raise NoReply(f"no reply within {timeout:g} s")
        return Reply.from_json(popped[1])

    def ask_many(self, queue: str, bodies: list, timeout: float) -> list:
        """Queue several requests in one RPUSH (served in order) and wait for their replies,
        all within the same `timeout`: per request its Reply, or the NoReply or
        MalformedMessage it met (not raised: the others may have their replies)."""
        _positive(timeout)
        if not bodies:
            return []
        requests = [Request.new(body, timeout=timeout, clock=self.clock) for body in bodies]
        self.client.rpush(queue, *(request.to_json() for request in requests))
        end = time.monotonic() + timeout + REPLY_GRACE
        replies = []
        for request in requests:
            left = max(end - time.monotonic(), 0.01)
            popped = self.client.blpop([self.reply_prefix + request.id], timeout=left)
            if popped is None:
                replies.append(NoReply(f"no reply within {timeout:g} s"))
                continue
            try:
                replies.append(Reply.from_json(popped[1]))
            except MalformedMessage as error:
                replies.append(error)
        return replies

    def tell(self, queue: str, bodies: list, timeout: float | None = None) -> list:
        """Queue requests nobody waits for, in one RPUSH: each must run within `timeout`
        seconds, or with None whenever a server takes it. Returns their ids."""
        if not bodies:
            return []
        requests = [Request.new(body, timeout=timeout, reply=False, clock=self.clock)
                    for body in bodies]
        self.client.rpush(queue, *(request.to_json() for request in requests))
        return [request.id for request in requests]


def _positive(timeout):
    if timeout is None or timeout <= 0:
        raise ValueError("a waiting request needs a positive timeout")


class RequestServer:
    """The serving side of one protocol: takes requests off its queues in batches and
    answers them.

    parse(request) -> the protocol's message (raise MalformedMessage: refused with 400);
    handle(queue, request, message) -> its Reply, or None when it is answered later
    (`reply`). `what` names a request in the log ("command", "claim request").
    """

    def __init__(self, client: redis.Redis, reply_prefix: str, *, what: str,
                 parse: Callable, handle: Callable, clock=time.time,
                 push: Callable[[list, int], bool] | None = None):
        self.client = client
        # push([(reply list, reply JSON)], ttl) -> whether they went out: a fenced server's
        # pushes only while it may still answer (the owner's, under its lease term).
        self.push = push or self._push
        self.reply_prefix = reply_prefix
        self.what = what
        self.parse = parse
        self.handle = handle
        self.clock = clock

    def serve(self, queues: list, timeout: float, limit: int) -> int:
        """Wait up to `timeout` seconds for a request on any of `queues` (not at all with 0),
        take up to `limit` queued ones of each, run and answer them; returns how many
        were taken. Raises redis's ConnectionError or TimeoutError when Redis fails it;
        requests already taken off their lists then still run (unanswered)."""
        taken, lost = self._take(queues, timeout, limit)
        replies = []
        for queue, raw in taken:
            answer = self._run(queue, raw)
            if answer is not None:
                replies.append(answer)
        if replies and lost is None:
            pushed = self.push([(self.reply_prefix + request_id, body)
                                for request_id, body in replies], REPLY_TTL)
            if not pushed:
                log.warning("withheld %d %s repl(ies): this server may no longer answer",
                            len(replies), self.what)
        if lost is not None:
            raise lost
        return len(taken)

    def reply(self, request_id: str, reply: Reply) -> None:
        """Answer one request now (one that `handle` left to answer later). Redis failing
        it is logged: its caller then hears nothing, as after a deadline."""
        try:
            pushed = self.push([(self.reply_prefix + request_id,
                                 self._encoded(request_id, reply))], REPLY_TTL)
        except redis.RedisError as error:
            log.error("could not reply to %s %s: %s", self.what, request_id, error)
            return
        if not pushed:
            log.warning("withheld the reply to %s %s: this server may no longer answer",
                        self.what, request_id)

    def _push(self, replies: list, ttl: int) -> bool:
        """The push of a server nothing fences: one pipeline, always out."""
        pipe = self.client.pipeline(transaction=False)
        for key, body in replies:
            pipe.lpush(key, body)
            pipe.expire(key, ttl)
        pipe.execute()
        return True

    def _take(self, queues, timeout, limit):
        """([(queue, raw request)], the outage met once some were taken, or None)."""
        taken, first_queue = [], None
        if timeout > 0:
            first = self.client.blpop(queues, timeout=timeout)
            if first is None:
                return [], None
            first_queue = first[0].decode() if isinstance(first[0], bytes) else first[0]
            taken.append((first_queue, first[1]))
        for queue in queues:
            count = limit - 1 if queue == first_queue else limit
            if count <= 0:
                continue
            try:
                taken.extend((queue, raw) for raw in self.client.lpop(queue, count) or ())
            except UNREACHABLE as error:
                if not taken:
                    raise
                return taken, error
        return taken, None

    def _run(self, queue, raw):
        """(request id, reply JSON) to push now, or None."""
        try:
            request = Request.from_json(raw)
        except MalformedMessage as error:
            if error.request_id is None:
                log.error("dropped a malformed %s (%s): %r", self.what, error, raw[:200])
                return None
            log.error("refused malformed %s %s: %s", self.what, error.request_id, error)
            return self._answer(error.request_id, error.wants_reply,
                                Reply.refusal(400, f"malformed {self.what}: {error}"))
        try:
            message = self.parse(request)
        except MalformedMessage as error:
            log.error("refused malformed %s %s: %s", self.what, request.id, error)
            return self._answer(request.id, request.reply,
                                Reply.refusal(400, f"malformed {self.what}: {error}"))
        late = request.late(self.clock())
        if late > 0:
            log.warning("dropped %s %s (%s): %.3f s past its deadline", self.what, request.id,
                        message, late)
            return None
        reply = self.handle(queue, request, message)
        return None if reply is None else self._answer(request.id, request.reply, reply)

    def _answer(self, request_id, wants_reply, reply):
        if not wants_reply:
            if not reply.ok:
                log.warning("%s %s (no reply wanted) refused: %s %s", self.what, request_id,
                            reply.status, reply.error)
            return None
        return request_id, self._encoded(request_id, reply)

    def _encoded(self, request_id, reply) -> bytes:
        try:
            return reply.to_json()
        except TypeError as error:
            log.error("%s %s: result is not JSON: %s", self.what, request_id, error)
            return Reply.refusal(500, f"result is not JSON: {error}").to_json()
