"""The messages the processes exchange, as tables: what each shape writes, what it reads
back, and the clear error a malformed one gets."""

import orjson
import pytest

from warmpool import ClaimOptions, ClaimResult

from dashboard.wire import keys
from dashboard.wire.commands import Command, CommandError, OwnerUnavailable, answer, malformed
from dashboard.wire.lease import holder_name, lease_token
from dashboard.wire.live import events_message, pools_changed_message
from dashboard.wire.pools import Claim, claim_reply, pod_summary, queue_full
from dashboard.wire.requests import MalformedMessage, Reply, Request, require_fields
from tests.children import fresh_interpreter


def raw(**fields) -> bytes:
    return orjson.dumps(fields)


# -- requests --------------------------------------------------------------------------------

def test_a_request_is_written_as_the_flat_object_callers_have_always_queued():
    request = Request.new({"op": "assume", "args": {"n": 1}, "actor": "alice"}, timeout=5,
                          clock=lambda: 1000.0)
    assert orjson.loads(request.to_json()) == {
        "id": request.id, "op": "assume", "args": {"n": 1}, "actor": "alice",
        "deadline": 1005.0, "reply": True}
    assert Request.from_json(request.to_json()) == request


def test_a_request_without_timeout_has_no_deadline_and_is_never_late():
    request = Request.new({}, timeout=None, reply=False)
    assert request.deadline is None and request.late(1e12) <= 0
    assert orjson.loads(request.to_json())["reply"] is False


@pytest.mark.parametrize("message, wants_reply", [
    ({"id": "r1", "deadline": 5.0}, True),          # no reply field: a reply is wanted
    ({"id": "r1", "deadline": 5.0, "reply": True}, True),
    ({"id": "r1", "deadline": None, "reply": False}, False),
    ({"id": "r1", "deadline": 5}, True),            # an integer deadline is a number too
])
def test_requests_read(message, wants_reply):
    request = Request.from_json(orjson.dumps(dict(message, op="x")))
    assert (request.id, request.reply, request.body) == ("r1", wants_reply, {"op": "x"})
    assert request.deadline == message["deadline"]


@pytest.mark.parametrize("text, problem, request_id", [
    (b"not json {", "not JSON", None),
    (b'["a", "list"]', "not a JSON object", None),
    (raw(op="x", deadline=1.0), "no id", None),
    (raw(id="", deadline=1.0), "no id", None),
    (raw(id=7, deadline=1.0), "no id", None),
    (raw(id="r1", op="x"), "missing deadline", "r1"),
    (raw(id="r1", deadline="soon"), "deadline is not a number", "r1"),
    (raw(id="r1", deadline=True), "deadline is not a number", "r1"),
])
def test_malformed_requests_say_why_and_whose(text, problem, request_id):
    with pytest.raises(MalformedMessage, match=problem) as info:
        Request.from_json(text)
    assert info.value.request_id == request_id


def test_a_late_request_knows_by_how_much():
    request = Request("r1", 100.0, {})
    assert request.late(99.0) == -1.0 and request.late(100.5) == 0.5


@pytest.mark.parametrize("body, shape, problem", [
    ({"op": "x"}, {"op": str, "args": dict, "actor": str}, "missing args, actor"),
    ({"op": 1, "args": {}}, {"op": str, "args": dict}, "op is not a string"),
    ({"op": "x", "args": []}, {"op": str, "args": dict}, "args is not an object"),
])
def test_require_fields_names_what_is_wrong(body, shape, problem):
    with pytest.raises(MalformedMessage, match=problem):
        require_fields(body, shape)


# -- replies ---------------------------------------------------------------------------------

@pytest.mark.parametrize("reply, written", [
    (Reply.success({"uid": "u1"}), {"ok": True, "result": {"uid": "u1"}}),
    (Reply.success(None), {"ok": True, "result": None}),
    (Reply.refusal(409, "taken"), {"ok": False, "status": 409, "error": "taken"}),
    (Reply.refusal(429, "full", 1), {"ok": False, "status": 429, "error": "full",
                                     "retry_after": 1}),
])
def test_replies_round_trip(reply, written):
    assert orjson.loads(reply.to_json()) == written
    assert Reply.from_json(reply.to_json()) == reply


def test_a_refusal_without_status_reads_as_a_500():
    assert Reply.from_json(raw(ok=False)) == Reply.refusal(500, "")


def test_a_result_that_is_not_json_cannot_be_written():
    with pytest.raises(TypeError):
        Reply.success(object()).to_json()


@pytest.mark.parametrize("text, problem", [
    (b"{", "not JSON"),
    (b"[1]", "no ok"),
    (raw(result=1), "no ok"),
    (raw(ok="yes"), "no ok"),
    (raw(ok=False, status="409"), "status, error"),
    (raw(ok=False, status=True), "status, error"),
    (raw(ok=False, status=409, error=5), "status, error"),
    (raw(ok=False, status=429, error="x", retry_after="1"), "status, error"),
])
def test_malformed_replies_say_why(text, problem):
    with pytest.raises(MalformedMessage, match=problem):
        Reply.from_json(text)


# -- the owner's commands --------------------------------------------------------------------

def test_a_command_reads_from_its_request():
    request = Request.new(Command("forget", {"uid": "u1"}, "bind").body(), timeout=None)
    assert Command.from_request(Request.from_json(request.to_json())) == Command(
        "forget", {"uid": "u1"}, "bind")
    assert str(Command("forget", {}, "bind")) == "forget by bind"


@pytest.mark.parametrize("body, problem", [
    ({"args": {}, "actor": "a"}, "missing op"),
    ({"op": "x", "args": {}}, "missing actor"),
    ({"op": ["x"], "args": {}, "actor": "a"}, "op is not a string"),
    ({"op": "x", "args": [], "actor": "a"}, "args is not an object"),
    ({"op": "x", "args": {}, "actor": None}, "actor is not a string"),
])
def test_malformed_commands_say_why(body, problem):
    with pytest.raises(MalformedMessage, match=problem):
        Command.from_request(Request("r1", None, body))


@pytest.mark.parametrize("reply, error", [
    (Reply.refusal(409, "taken"), CommandError),
    (Reply.refusal(404, "no such pod"), CommandError),
    (Reply.refusal(503, "relisting"), OwnerUnavailable),
])
def test_a_refusal_is_the_command_error_of_its_status(reply, error):
    with pytest.raises(error) as info:
        answer(reply)
    assert (info.value.status, info.value.message) == (reply.status, reply.error)


def test_an_unreadable_reply_is_a_500():
    error = malformed(MalformedMessage("malformed reply (no ok): b'[]'"))
    assert error.status == 500 and "cache owner" in error.message


# -- the pools' claims -----------------------------------------------------------------------

def test_a_claim_reads_from_its_request():
    claim = Claim.of("web", {"labels": {"team": "search"}}, "alice")
    request = Request.from_json(Request.new(claim.body(), timeout=5).to_json())
    assert Claim.from_request(request) == claim
    assert claim.options == ClaimOptions(labels={"team": "search"})


@pytest.mark.parametrize("options, problem", [
    ({"colour": "red"}, "colour"),                    # not a ClaimOptions field
    ({"labels": {"bad key!": "x"}}, "not a valid key"),
    ({"container_images": {"main": ""}}, "no image"),
])
def test_bad_claim_options_are_refused_before_anything_queues(options, problem):
    with pytest.raises(ValueError, match=problem):
        Claim.of("web", options, "alice")


@pytest.mark.parametrize("body, deadline, problem", [
    ({"pool": "web", "options": {}, "actor": "a"}, None, "needs a deadline"),
    ({"pool": "web", "actor": "a"}, 5.0, "missing options"),
    ({"pool": "web", "options": [], "actor": "a"}, 5.0, "options is not an object"),
    ({"pool": "web", "options": {"labels": 1}, "actor": "a"}, 5.0, "must map strings"),
])
def test_malformed_claims_say_why(body, deadline, problem):
    with pytest.raises(MalformedMessage, match=problem):
        Claim.from_request(Request("r1", deadline, body))


POD = {"metadata": {"namespace": "warm-pools", "name": "web-0", "uid": "u", "labels": {"a": "b"},
                    "resourceVersion": "7"},
       "spec": {"nodeName": "n1", "containers": [{"name": "main", "image": "nginx"}]}}


@pytest.mark.parametrize("result, written", [
    (ClaimResult(True, "success", pod=POD, latency=0.0123456, attempts=2),
     {"ok": True, "result": {"pod": pod_summary(POD), "latency_ms": 12.346, "attempts": 2}}),
    (ClaimResult(False, "expired", error="late"), {"ok": False, "status": 504, "error": "late"}),
    (ClaimResult(False, "hard", error="gone"), {"ok": False, "status": 502, "error": "gone"}),
    (ClaimResult(False, "shutdown", error="bye"),
     {"ok": False, "status": 503, "error": "bye", "retry_after": 1}),
])
def test_how_a_claim_ended_is_its_reply(result, written):
    assert orjson.loads(claim_reply(result).to_json()) == written


def test_a_full_queue_is_a_429_with_retry_after():
    reply = queue_full("tiny")
    assert (reply.status, reply.retry_after) == (429, 1) and "'tiny'" in reply.error


def test_a_pod_summary_keeps_what_a_claimer_needs():
    assert pod_summary(POD) == {
        "namespace": "warm-pools", "name": "web-0", "uid": "u", "resourceVersion": "7",
        "nodeName": "n1", "labels": {"a": "b"}, "annotations": {}, "images": {"main": "nginx"}}


# -- keys, groups, the lease ---------------------------------------------------------------

def test_every_key_is_in_the_schedview_namespace():
    names = [value for name, value in vars(keys).items()
             if name.isupper() and isinstance(value, str) and not name.endswith(("_GROUP",
                                                                                  "_SUFFIX"))]
    assert names and all(name.startswith("schedview:") for name in names)
    assert len(set(names)) == len(names)


@pytest.mark.parametrize("key, expected", [
    (keys.owner_reply("abc"), "schedview:owner:reply:abc"),
    (keys.pool_claims("web"), "schedview:pools:claims:web"),
    (keys.pool_reply("abc"), "schedview:pools:reply:abc"),
    (keys.lease_term(keys.OWNER_LEASE), "schedview:owner:leader:term"),
])
def test_derived_keys(key, expected):
    assert key == expected


def test_group_messages_are_delivered_to_cache_events():
    assert events_message([{"seq": 1}], {"seq": 1}) == {
        "type": "cache.events", "events": [{"seq": 1}], "status": {"seq": 1}}
    assert pools_changed_message() == {"type": "cache.events", "events": [], "pools": True}


@pytest.mark.parametrize("token, holder", [
    ("schedview-owner-7d9f-abc:1:0f3e", "schedview-owner-7d9f-abc:1"),
    (None, ""),
    ("", ""),
])
def test_a_lease_token_names_its_holder(token, holder):
    assert holder_name(token) == holder


def test_a_new_token_names_its_holder():
    token = lease_token("owner-a:7")
    assert holder_name(token) == "owner-a:7" and token != lease_token("owner-a:7")


def test_the_package_needs_no_django():
    """Any process may speak it, settings or none: importing it imports nothing of Django's
    or of another process's package."""
    modules = "keys, clients, requests, commands, pools, live, lease"
    loaded = fresh_interpreter(
        f"import sys; from dashboard.wire import {modules}; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('django', 'channels') or "
        "m.startswith('dashboard.') and not m.startswith('dashboard.wire')))")
    assert loaded.strip() == "[]"
