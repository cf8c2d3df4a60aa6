"""Commands to the cache owner over the real Redis of the run (REDIS_URL or embedded): the
web's client (dashboard.clients.owner_client) and the owner's server (dashboard.owner.commands)."""
import logging
import threading
import time
import uuid

import orjson
import pytest
from django.conf import settings

from dashboard.clients.owner_client import send, send_many
from dashboard.owner import commands
from dashboard.owner.commands import CommandServer
from dashboard.owner.fence import RedisFence
from dashboard.wire import requests
from dashboard.wire.clients import redis_client
from dashboard.wire.commands import Command, CommandError, OwnerUnavailable
from dashboard.wire.keys import OWNER_COMMANDS, OWNER_REPLY_PREFIX, owner_reply
from dashboard.wire.requests import REPLY_TTL, Request

# -- helpers shared with test_tasks and test_actions ------------------------------------------

@pytest.fixture
def rclient(redis_url):
    """The run's Redis with no commands or replies left over from another test."""
    client = redis_client(settings.REDIS_URL)
    _clear(client)
    yield client
    _clear(client)


def _clear(client):
    client.delete(OWNER_COMMANDS)
    for key in client.scan_iter(OWNER_REPLY_PREFIX + "*"):
        client.delete(key)


class ServerThread:
    """A CommandServer serving in a thread, standing in for the owner.

    Every command that reaches a handler is recorded as (op, args, actor);
    `wait_for(predicate)` blocks until the records satisfy it (no sleeps).
    """

    def __init__(self, handlers=None, ops=(), clock=time.time):
        self.records = []
        self.cond = threading.Condition()
        wrapped = {op: self._recording(op, lambda args, actor: {"recorded": True})
                   for op in ops}
        for op, handler in (handlers or {}).items():
            wrapped[op] = self._recording(op, handler)
        self.server = CommandServer(wrapped, clock=clock)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True, name="test-owner")

    def _recording(self, op, handler):
        def run(args, actor):
            try:
                return handler(args, actor)
            finally:
                with self.cond:
                    self.records.append((op, args, actor))
                    self.cond.notify_all()
        return run

    def _run(self):
        while not self.stop.is_set():
            self.server.serve(timeout=0.05)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(5)

    def wait_for(self, predicate, timeout=20.0):
        with self.cond:
            if not self.cond.wait_for(lambda: predicate(self.records), timeout):
                raise AssertionError(f"timed out; records so far: {self.records}")
            return list(self.records)

    def ops(self, op):
        with self.cond:
            return [(args, actor) for o, args, actor in self.records if o == op]


def queued(client):
    return [orjson.loads(raw) for raw in client.lrange(OWNER_COMMANDS, 0, -1)]


def reply_keys(client):
    return list(client.scan_iter(OWNER_REPLY_PREFIX + "*"))


def command(op, args=None, timeout=5.0):
    """A command as the web queues it, to push by hand."""
    return Request.new(Command(op, args or {}, "system").body(), timeout=timeout)


# -- round trips ------------------------------------------------------------------------------

def test_round_trip_returns_the_handlers_result(rclient):
    def echo(args, actor):
        return {"args": args, "actor": actor}

    with ServerThread({"echo": echo}) as owner:
        assert send("echo", {"x": [1, 2]}, actor="alice", timeout=5) == {
            "args": {"x": [1, 2]}, "actor": "alice"}
        assert send("echo", timeout=5) == {"args": {}, "actor": "system"}
    assert [a for a, _ in owner.ops("echo")] == [{"x": [1, 2]}, {}]
    assert reply_keys(rclient) == []   # the sender took its reply


@pytest.mark.parametrize("status", [400, 404, 409])
def test_refusal_carries_status_and_message(rclient, status):
    def refuse(args, actor):
        raise CommandError(status, f"refused {args['uid']}")

    with ServerThread({"forget": refuse}):
        with pytest.raises(CommandError) as info:
            send("forget", {"uid": "u1"}, timeout=5)
    assert (info.value.status, info.value.message) == (status, "refused u1")
    assert not isinstance(info.value, OwnerUnavailable)


def test_handler_crash_answers_500_and_logs_the_traceback(rclient, caplog):
    def crash(args, actor):
        raise ZeroDivisionError("boom")

    with ServerThread({"crash": crash}), caplog.at_level(logging.ERROR, commands.__name__):
        with pytest.raises(CommandError) as info:
            send("crash", timeout=5)
    assert info.value.status == 500 and "boom" in info.value.message
    crashed = [r for r in caplog.records if r.exc_info]
    assert crashed and crashed[0].exc_info[0] is ZeroDivisionError


def test_result_that_is_not_json_answers_500(rclient):
    with ServerThread({"odd": lambda args, actor: object()}):
        with pytest.raises(CommandError) as info:
            send("odd", timeout=5)
    assert info.value.status == 500


def test_unknown_op_is_refused_with_400(rclient):
    with ServerThread({"echo": lambda a, b: 1}):
        with pytest.raises(CommandError) as info:
            send("no-such-op", timeout=5)
    assert info.value.status == 400 and "no-such-op" in info.value.message


def test_owner_side_503_raises_owner_unavailable(rclient):
    def busy(args, actor):
        raise CommandError(503, "relisting")

    with ServerThread({"status": busy}):
        with pytest.raises(OwnerUnavailable, match="relisting"):
            send("status", timeout=5)


# -- malformed, late and unanswered commands ------------------------------------------------

def test_malformed_messages_are_skipped_and_the_ones_with_an_id_refused(rclient, caplog):
    ran = []
    server = CommandServer({"echo": lambda args, actor: ran.append(args) or "ok"})
    good = command("echo", {"n": 1})
    rclient.rpush(OWNER_COMMANDS,
                  b"not json {",
                  orjson.dumps(["a", "list"]),
                  orjson.dumps({"op": "echo", "args": {}}),                 # no id
                  orjson.dumps({"id": "m1", "op": "echo"}),                 # missing fields
                  orjson.dumps({"id": "m2", "op": "echo", "args": [], "actor": "a",
                                "deadline": None}),                         # args not a dict
                  good.to_json())
    with caplog.at_level(logging.ERROR, requests.__name__):
        assert server.serve(timeout=1) == 6
    assert ran == [{"n": 1}]
    assert rclient.llen(OWNER_COMMANDS) == 0
    for command_id in ("m1", "m2"):
        reply = orjson.loads(rclient.lpop(owner_reply(command_id)))
        assert reply["ok"] is False and reply["status"] == 400
    assert orjson.loads(rclient.lpop(owner_reply(good.id))) == {"ok": True, "result": "ok"}
    assert sum("malformed" in r.getMessage() for r in caplog.records) == 5


def test_replies_expire(rclient):
    server = CommandServer({"echo": lambda args, actor: 1})
    msg = command("echo")
    rclient.rpush(OWNER_COMMANDS, msg.to_json())
    server.serve(timeout=1)
    assert 0 < rclient.ttl(owner_reply(msg.id)) <= REPLY_TTL


def test_command_past_its_deadline_never_runs(rclient, caplog):
    ran = []
    later = lambda: time.time() + 60                            # noqa: E731
    server = CommandServer({"assume": lambda args, actor: ran.append(args)}, clock=later)
    send("assume", {"name": "p"}, timeout=5, wait=False)
    msg = command("assume", {"name": "q"})
    rclient.rpush(OWNER_COMMANDS, msg.to_json())
    with caplog.at_level(logging.WARNING, requests.__name__):
        assert server.serve(timeout=1) == 2
    assert ran == []
    assert rclient.exists(owner_reply(msg.id)) == 0   # dropped unanswered
    assert sum("past its deadline" in r.getMessage() for r in caplog.records) == 2


def test_command_without_deadline_waits_for_any_owner(rclient):
    ran = []
    send("finish_binding", {"uid": "u"}, wait=False, timeout=None)
    [msg] = queued(rclient)
    assert msg["deadline"] is None and msg["reply"] is False
    much_later = lambda: time.time() + 86400                      # noqa: E731
    server = CommandServer({"finish_binding": lambda args, actor: ran.append(args)},
                           clock=much_later)
    assert server.serve(timeout=1) == 1
    assert ran == [{"uid": "u"}]


def test_no_owner_raises_owner_unavailable_after_the_timeout(rclient):
    start = time.monotonic()
    with pytest.raises(OwnerUnavailable) as info:
        send("status", timeout=0.2)
    elapsed = time.monotonic() - start
    assert info.value.status == 503
    assert 0.2 <= elapsed < 2
    # The command stays queued, with a deadline that makes a later owner drop it.
    [msg] = queued(rclient)
    assert msg["op"] == "status" and msg["deadline"] <= time.time()


def test_a_waiting_send_needs_a_timeout(rclient):
    with pytest.raises(ValueError):
        send("status", timeout=None)


def test_wait_false_gets_no_reply(rclient):
    server = CommandServer({"reap": lambda args, actor: {"expired": 3}})
    command_id = send("reap", {"now": 1.0}, actor="reaper", wait=False)
    [msg] = queued(rclient)
    assert msg["id"] == command_id and msg["reply"] is False and msg["actor"] == "reaper"
    assert server.serve(timeout=1) == 1
    assert reply_keys(rclient) == []


def test_refused_command_without_reply_is_logged(rclient, caplog):
    def refuse(args, actor):
        raise CommandError(404, "no such pod")

    server = CommandServer({"forget": refuse})
    send("forget", {"uid": "u"}, wait=False)
    with caplog.at_level(logging.WARNING, requests.__name__):
        server.serve(timeout=1)
    assert reply_keys(rclient) == []
    assert any("no such pod" in r.getMessage() for r in caplog.records)


# -- batches -----------------------------------------------------------------------------------

def test_many_queued_commands_are_drained_in_one_serve(rclient):
    ran = []
    server = CommandServer({"finish_binding": lambda args, actor: ran.append(args["n"])})
    send_many([("finish_binding", {"n": n}) for n in range(700)], wait=False)
    assert server.serve(timeout=1) == 700
    assert ran == list(range(700))          # in the order they were sent
    assert rclient.llen(OWNER_COMMANDS) == 0


def test_serve_takes_at_most_limit(rclient):
    server = CommandServer({"x": lambda args, actor: None})
    send_many([("x", {})] * 30, wait=False)
    assert server.serve(timeout=1, limit=10) == 10
    assert rclient.llen(OWNER_COMMANDS) == 20
    assert server.serve(timeout=0, limit=100) == 20


def test_serve_returns_zero_when_nothing_comes(rclient):
    server = CommandServer({})
    start = time.monotonic()
    assert server.serve(timeout=0.1) == 0
    assert time.monotonic() - start >= 0.1


def test_send_many_waits_for_each_reply(rclient):
    def assume(args, actor):
        if args["name"] == "taken":
            raise CommandError(409, "already assumed")
        return {"uid": args["name"] + "-uid", "actor": actor}

    with ServerThread({"assume": assume}):
        results = send_many([("assume", {"name": "a"}), ("assume", {"name": "taken"}),
                             ("assume", {"name": "b"})], actor="bob", timeout=5)
    assert results[0] == {"uid": "a-uid", "actor": "bob"}
    assert isinstance(results[1], CommandError) and results[1].status == 409
    assert results[2] == {"uid": "b-uid", "actor": "bob"}


def test_redis_down_is_owner_unavailable(rclient, settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"    # nothing listens on port 1
    with pytest.raises(OwnerUnavailable, match="Redis"):
        send("status", timeout=0.5)


def test_redis_client_is_one_per_process_and_url(redis_url):
    client = redis_client(redis_url)
    assert client is redis_client(redis_url)
    assert client is not redis_client("redis://127.0.0.1:1/0")
    assert client.ping()


# -- fenced replies ---------------------------------------------------------------------------

@pytest.mark.parametrize("term_now, answered", [
    (b"7", True),        # the replier's term is the lease's
    (b"8", False),       # another owner took the lease while it held the command
    (None, False),       # an emptied Redis: unproven until the leader sets the copy again
])
def test_an_owner_replies_only_under_its_current_lease_term(rclient, caplog, term_now,
                                                           answered):
    """An owner frozen (SIGSTOP) holding a popped command must not, woken stale, tell its
    caller "done" for what the new leader never saw: the reply does not go out, and the
    caller hears what it hears from no owner."""
    lease_key, term_key = f"test:fence:{uuid.uuid4().hex}", f"test:fence:{uuid.uuid4().hex}"
    if term_now is not None:
        rclient.set(term_key, term_now)
    ran = []
    server = CommandServer({"assume": lambda args, actor: ran.append(args) or "assumed"},
                           fence=RedisFence(rclient, lease_key, term_key), term=7)
    msg = command("assume", {"name": "p"})
    rclient.rpush(OWNER_COMMANDS, msg.to_json())
    try:
        with caplog.at_level(logging.WARNING, requests.__name__):
            assert server.serve(timeout=1) == 1
    finally:
        rclient.delete(term_key)
    assert ran == [{"name": "p"}]
    ttl = rclient.ttl(owner_reply(msg.id))
    reply = rclient.lpop(owner_reply(msg.id))
    if answered:
        assert orjson.loads(reply) == {"ok": True, "result": "assumed"}
        assert 0 < ttl <= REPLY_TTL
    else:
        assert reply is None
        assert any("withheld 1 command" in r.getMessage() for r in caplog.records)
