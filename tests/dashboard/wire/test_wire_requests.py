"""The request/reply protocol over the run's real Redis: round trips, deadlines, requests
nobody waits for, batches, answers given later, malformed requests, and Redis failing."""
import logging
import threading
import time

import orjson
import pytest
import redis

from dashboard.wire import requests
from dashboard.wire.clients import redis_client
from dashboard.wire.requests import (
    REPLY_GRACE,
    REPLY_TTL,
    MalformedMessage,
    NoReply,
    Reply,
    Request,
    RequestClient,
    RequestServer,
    require_fields,
)

QUEUES = ["test:wire:queue:a", "test:wire:queue:b"]
PREFIX = "test:wire:reply:"
DEAD = "redis://127.0.0.1:1/0"    # nothing listens on port 1


@pytest.fixture
def client(redis_url):
    client = redis_client(redis_url)
    _clear(client)
    yield client
    _clear(client)


def _clear(client):
    client.delete(*QUEUES)
    for key in client.scan_iter(PREFIX + "*"):
        client.delete(key)


def parse(request):
    require_fields(request.body, {"n": int})
    return request.body["n"]


class Server:
    """A RequestServer whose handler records (queue, n) and answers n * 2; a negative n
    is refused with 409, n == 0 is left to answer later (`later`)."""

    def __init__(self, client, clock=time.time):
        self.handled = []
        self.later = []
        self.cond = threading.Condition()
        self.server = RequestServer(client, PREFIX, what="test request", parse=parse,
                                    handle=self.handle, clock=clock)

    def handle(self, queue, request, n):
        with self.cond:
            self.handled.append((queue, n))
            self.cond.notify_all()
        if n < 0:
            return Reply.refusal(409, f"{n} is negative")
        if n == 0:
            self.later.append(request.id)
            return None
        return Reply.success(n * 2)

    def wait_for(self, count, timeout=10.0):
        with self.cond:
            assert self.cond.wait_for(lambda: len(self.handled) >= count, timeout), self.handled


@pytest.fixture
def serving(client, served):
    """A Server serving both queues on a thread."""
    server = Server(client)
    served(lambda: server.server.serve(QUEUES, 0.05, 100))
    return server


def reply_keys(client):
    return list(client.scan_iter(PREFIX + "*"))


# -- round trips -----------------------------------------------------------------------------

def test_ask_returns_the_reply_and_leaves_no_reply_behind(client, serving):
    asking = RequestClient(client, PREFIX)
    assert asking.ask(QUEUES[1], {"n": 21}, timeout=5) == Reply.success(42)
    assert asking.ask(QUEUES[0], {"n": -1}, timeout=5) == Reply.refusal(409, "-1 is negative")
    assert serving.handled == [(QUEUES[1], 21), (QUEUES[0], -1)]
    assert reply_keys(client) == []


def test_ask_many_replies_in_order_each_its_own(client, serving):
    replies = RequestClient(client, PREFIX).ask_many(QUEUES[0], [{"n": 1}, {"n": -2}, {"n": 3}],
                                                     timeout=5)
    assert replies == [Reply.success(2), Reply.refusal(409, "-2 is negative"), Reply.success(6)]
    assert RequestClient(client, PREFIX).ask_many(QUEUES[0], [], timeout=5) == []


def test_an_answer_given_later_reaches_its_caller(client, serving):
    asking = RequestClient(client, PREFIX)
    result = {}
    thread = threading.Thread(target=lambda: result.update(reply=asking.ask(
        QUEUES[0], {"n": 0}, timeout=5)))
    thread.start()
    serving.wait_for(1)
    serving.server.reply(serving.later[0], Reply.success("later"))
    thread.join(10)
    assert result == {"reply": Reply.success("later")}


@pytest.mark.parametrize("timeout", [0, -1, None])
def test_a_waiting_request_needs_a_positive_timeout(client, timeout):
    with pytest.raises(ValueError):
        RequestClient(client, PREFIX).ask(QUEUES[0], {"n": 1}, timeout=timeout)
    assert client.llen(QUEUES[0]) == 0


# -- deadlines -------------------------------------------------------------------------------

def test_no_server_is_no_reply_after_the_timeout_and_its_grace(client):
    start = time.monotonic()
    with pytest.raises(NoReply):
        RequestClient(client, PREFIX).ask(QUEUES[0], {"n": 1}, timeout=0.2)
    assert 0.2 + REPLY_GRACE <= time.monotonic() - start < 2
    [queued] = client.lrange(QUEUES[0], 0, -1)      # still queued, but too late to run
    assert Request.from_json(queued).deadline <= time.time()


def test_a_request_past_its_deadline_is_dropped_unanswered(client, caplog):
    RequestClient(client, PREFIX).tell(QUEUES[0], [{"n": 1}], timeout=5)
    request = Request.new({"n": 2}, timeout=5)
    client.rpush(QUEUES[0], request.to_json())
    server = Server(client, clock=lambda: time.time() + 60)
    with caplog.at_level(logging.WARNING, requests.__name__):
        assert server.server.serve(QUEUES, 1, 100) == 2
    assert server.handled == [] and reply_keys(client) == []
    assert sum("past its deadline" in r.getMessage() for r in caplog.records) == 2


def test_a_request_without_deadline_runs_whenever_it_is_taken(client):
    [request_id] = RequestClient(client, PREFIX).tell(QUEUES[0], [{"n": 4}])
    queued = Request.from_json(client.lindex(QUEUES[0], 0))
    assert (queued.id, queued.deadline, queued.reply) == (request_id, None, False)
    server = Server(client, clock=lambda: time.time() + 86400)
    assert server.server.serve(QUEUES, 1, 100) == 1
    assert server.handled == [(QUEUES[0], 4)] and reply_keys(client) == []


def test_a_refusal_nobody_waits_for_is_logged(client, caplog):
    RequestClient(client, PREFIX).tell(QUEUES[0], [{"n": -5}])
    with caplog.at_level(logging.WARNING, requests.__name__):
        Server(client).server.serve(QUEUES, 1, 100)
    assert reply_keys(client) == []
    assert any("-5 is negative" in r.getMessage() for r in caplog.records)


# -- batches ---------------------------------------------------------------------------------

def test_serve_takes_at_most_limit_of_each_queue_in_order(client):
    asking = RequestClient(client, PREFIX)
    asking.tell(QUEUES[0], [{"n": n} for n in range(1, 8)])
    asking.tell(QUEUES[1], [{"n": n} for n in range(11, 14)])
    server = Server(client)
    assert server.server.serve(QUEUES, 1, 5) == 8
    assert server.handled == ([(QUEUES[0], n) for n in range(1, 6)]
                              + [(QUEUES[1], n) for n in range(11, 14)])
    assert server.server.serve(QUEUES, 0, 5) == 2       # without waiting: what is queued
    assert server.server.serve(QUEUES, 0, 5) == 0


def test_serve_waits_up_to_its_timeout_when_nothing_comes(client):
    start = time.monotonic()
    assert Server(client).server.serve(QUEUES, 0.1, 10) == 0
    assert time.monotonic() - start >= 0.1


def test_the_replies_of_a_batch_expire(client):
    requests_sent = [Request.new({"n": n}, timeout=5) for n in (1, 2)]
    client.rpush(QUEUES[0], *(r.to_json() for r in requests_sent))
    Server(client).server.serve(QUEUES, 1, 10)
    for request in requests_sent:
        assert 0 < client.ttl(PREFIX + request.id) <= REPLY_TTL
    assert [Reply.from_json(client.lpop(PREFIX + r.id)) for r in requests_sent] == [
        Reply.success(2), Reply.success(4)]


# -- malformed -------------------------------------------------------------------------------

def test_malformed_requests_are_dropped_or_refused_with_400(client, caplog):
    good = Request.new({"n": 1}, timeout=5)
    client.rpush(QUEUES[0],
                 b"not json {",
                 orjson.dumps({"n": 1, "deadline": None}),                   # no id: dropped
                 orjson.dumps({"id": "m1", "n": 1}),                          # no deadline
                 orjson.dumps({"id": "m2", "n": "one", "deadline": None}),    # not the shape
                 orjson.dumps({"id": "m3", "n": "one", "deadline": None, "reply": False}),
                 good.to_json())
    server = Server(client)
    with caplog.at_level(logging.ERROR, requests.__name__):
        assert server.server.serve(QUEUES, 1, 10) == 6
    assert server.handled == [(QUEUES[0], 1)]
    assert Reply.from_json(client.lpop(PREFIX + "m1")).error == (
        "malformed test request: missing deadline")
    assert Reply.from_json(client.lpop(PREFIX + "m2")).error == (
        "malformed test request: n is not an integer")
    assert not client.exists(PREFIX + "m3")
    assert Reply.from_json(client.lpop(PREFIX + good.id)) == Reply.success(2)
    assert sum("malformed" in r.getMessage() for r in caplog.records) == 5


def test_a_result_that_is_not_json_is_answered_500(client):
    server = RequestServer(client, PREFIX, what="test request", parse=parse,
                           handle=lambda queue, request, n: Reply.success(object()))
    request = Request.new({"n": 1}, timeout=5)
    client.rpush(QUEUES[0], request.to_json())
    server.serve(QUEUES, 1, 10)
    reply = Reply.from_json(client.lpop(PREFIX + request.id))
    assert reply.status == 500 and "not JSON" in reply.error


def test_an_unreadable_reply_is_met_not_raised_in_a_batch(client):
    def garbled_server():
        """Answers the first request with something that is no reply, the second right."""
        for answer in (b"[]", Reply.success(1).to_json()):
            _, raw = client.blpop([QUEUES[0]], timeout=10)
            client.lpush(PREFIX + Request.from_json(raw).id, answer)

    thread = threading.Thread(target=garbled_server)
    thread.start()
    replies = RequestClient(client, PREFIX).ask_many(QUEUES[0], [{"n": 1}, {"n": 2}],
                                                     timeout=5)
    thread.join(10)
    assert isinstance(replies[0], MalformedMessage) and replies[1] == Reply.success(1)


# -- Redis failing ---------------------------------------------------------------------------

def test_redis_down_raises_redis_errors_on_both_sides():
    dead = redis.Redis.from_url(DEAD, socket_connect_timeout=0.5)
    with pytest.raises(redis.ConnectionError):
        RequestClient(dead, PREFIX).ask(QUEUES[0], {"n": 1}, timeout=0.5)
    with pytest.raises(redis.ConnectionError):
        RequestClient(dead, PREFIX).tell(QUEUES[0], [{"n": 1}])
    with pytest.raises(redis.ConnectionError):
        Server(dead).server.serve(QUEUES, 0.1, 10)


class FailsAfterTheFirstPop:
    """The run's Redis, until the server's first non-blocking pop: Redis went away between
    the two calls of one serve."""

    def __init__(self, client):
        self.client = client

    def blpop(self, *args, **kwargs):
        return self.client.blpop(*args, **kwargs)

    def lpop(self, *args, **kwargs):
        raise redis.ConnectionError("Redis went away (test)")

    def pipeline(self, **kwargs):
        raise AssertionError("no reply may be sent once Redis failed the batch")


def test_a_request_taken_before_redis_failed_still_runs_unanswered(client):
    client.rpush(QUEUES[0], *(Request.new({"n": n}, timeout=5).to_json() for n in (1, 2)))
    server = Server(FailsAfterTheFirstPop(client))
    with pytest.raises(redis.ConnectionError):
        server.server.serve(QUEUES, 1, 10)
    assert server.handled == [(QUEUES[0], 1)]       # taken: it ran
    assert client.llen(QUEUES[0]) == 1              # the other waits for the next serve


def test_a_later_answer_redis_fails_is_logged_not_raised(caplog):
    dead = redis.Redis.from_url(DEAD, socket_connect_timeout=0.5)
    server = RequestServer(dead, PREFIX, what="test request", parse=parse,
                           handle=lambda *args: None)
    with caplog.at_level(logging.ERROR, requests.__name__):
        server.reply("r1", Reply.success(1))
    assert any("could not reply to test request r1" in r.getMessage() for r in caplog.records)
