"""kube-scheduler's calls in the owner's loop (`runner.step` with the listener's calls): served
ahead of the feed, which is applied in chunks between them, on a real CacheOwner with its
extender attached as `manage.py watch` attaches it."""
import logging
import socket
import threading

import pytest
from django.conf import settings
from django.test import override_settings

from schedcache import Cache
from simcluster.generate import make_node, make_pod

from dashboard.clients.owner_client import send
from dashboard.kube.binding import FINISH, FORGET
from dashboard.owner.commands import CommandServer
from dashboard.owner.extender.listener import ExtenderListener
from dashboard.owner.extender.owner_calls import OwnerCalls
from dashboard.owner.owner import CacheOwner
from dashboard.owner.runner import (
    COMMAND_PERIOD,
    FEED_CHUNK,
    SchedulerDoor,
    attach_extender,
    fenced_binding,
    listen_for_scheduler,
    step,
)
from dashboard.wire.clients import redis_client
from dashboard.wire.keys import OWNER_COMMANDS
from tests.dashboard.owner.extender.extender_builders import BindRecorder, bind_args, filter_args
from tests.dashboard.owner.extender.listener_client import connect, post
from tests.decoded_feed import synced_items, watched
from tests.waiting import wait_for

NEVER = float("inf")


@pytest.fixture
def owner(redis_url):
    redis_client(settings.REDIS_URL).delete(OWNER_COMMANDS)
    owner = CacheOwner(Cache(ttl=0), command_server=CommandServer({}))
    owner.binds = BindRecorder()
    attach_extender(owner, schedule_bind=owner.binds)
    for item in synced_items([make_node("n1"), make_node("n2")], []):
        owner.feed.put(item)
    owner.drain_feed()
    return owner


def test_a_queued_call_runs_before_the_feed_which_is_applied_in_chunks(owner):
    calls = OwnerCalls(owner.commands.handlers, "kube-scheduler")
    backlog = 3 * FEED_CHUNK
    for i in range(backlog):
        owner.feed.put(watched("pods", "ADDED", make_pod(f"p{i}", uid=f"uid-{i}")))
    answers = []
    caller = threading.Thread(target=lambda: answers.append(calls.call("status", {}, 5)))
    caller.start()
    assert calls.wait(5)
    step(owner, {"flush": NEVER, "snapshot": NEVER}, None, calls=calls)
    caller.join(5)
    assert answers[0]["feed_backlog"] == backlog      # answered before any feed item
    assert owner.feed.qsize() == backlog - FEED_CHUNK


def call_in_background(calls, op="status"):
    """A listener thread's call, queued once this returns; join the returned thread."""
    caller = threading.Thread(target=calls.call, args=(op, {}, 5))
    caller.start()
    assert calls.wait(5)
    return caller


def test_while_kube_scheduler_calls_redis_is_looked_at_only_every_period(owner):
    calls = OwnerCalls(owner.commands.handlers, "kube-scheduler")
    deadlines = {"flush": NEVER, "snapshot": NEVER}
    client = redis_client(settings.REDIS_URL)

    def turn(at):
        caller = call_in_background(calls)
        step(owner, deadlines, None, clock=lambda: at, calls=calls)
        caller.join(5)

    send("status", wait=False, client=client)
    turn(100.0)                                   # a call, and Redis's first look
    assert client.llen(OWNER_COMMANDS) == 0
    send("status", wait=False, client=client)
    turn(100.0 + COMMAND_PERIOD / 2)
    assert client.llen(OWNER_COMMANDS) == 1         # kube-scheduler's calls only
    turn(100.0 + COMMAND_PERIOD)
    assert client.llen(OWNER_COMMANDS) == 0
    send("status", wait=False, client=client)
    # kube-scheduler pauses: the idle wait times out and Redis is looked at next turn.
    step(owner, deadlines, None, clock=lambda: 100.0 + COMMAND_PERIOD * 1.5, calls=calls)
    assert client.llen(OWNER_COMMANDS) == 1
    step(owner, deadlines, None, clock=lambda: 100.0 + COMMAND_PERIOD * 1.5, calls=calls)
    assert client.llen(OWNER_COMMANDS) == 0


def test_filter_over_the_listener_decides_on_the_owners_cache(owner, served):
    calls = OwnerCalls(owner.scheduler_verbs, "kube-scheduler")
    deadlines = {"flush": 0.0, "snapshot": 0.0}
    pod = make_pod("web", uid="uid-web", requests={"cpu": "1"})
    owner.feed.put(watched("pods", "ADDED", pod))     # pending, as the watch shows it
    served(lambda: step(owner, deadlines, None, calls=calls))
    listener = ExtenderListener("127.0.0.1:0", calls, 5.0, post_binding=None).start()
    try:
        status, result = post(connect(listener), "filter",
                              filter_args(pod, [make_node("n1"), make_node("n2")]))
    finally:
        listener.close()
    assert status == 200 and result["Error"] == ""
    assert owner.cache.is_assumed_pod(pod)
    assert owner.status()["extender_statuses"] > 0
    assert owner.stats["commands"] == 1                # counted as the owner's commands are


def test_a_taken_address_is_logged_and_the_owner_goes_on(caplog):
    calls = OwnerCalls({}, "kube-scheduler")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = "127.0.0.1:%d" % taken.getsockname()[1]
        with override_settings(SCHEDVIEW_EXTENDER_ADDRESS=address):
            assert listen_for_scheduler(calls) is None
    assert f"SCHEDVIEW_EXTENDER_ADDRESS={address}" in caplog.text
    with override_settings(SCHEDVIEW_EXTENDER_ADDRESS=address):
        listener = listen_for_scheduler(calls)    # the address is free again
    try:
        assert listener.url == f"http://{address}/extender"
    finally:
        listener.close()


def test_a_leader_that_cannot_listen_says_why_until_it_does():
    """Issue 22: a former leader frozen with the port (SIGSTOP) keeps the new leader from
    listening; the new one's status says so (health warns) until its next try succeeds."""
    door = SchedulerDoor(OwnerCalls({}, "kube-scheduler"))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = "127.0.0.1:%d" % taken.getsockname()[1]
        with override_settings(SCHEDVIEW_EXTENDER_ADDRESS=address):
            door.open(now=0.0)
    assert door.status()["extender_refused"].startswith(f"cannot listen on {address}: ")
    with override_settings(SCHEDVIEW_EXTENDER_ADDRESS=address):
        door.open(now=1.0)             # too soon to try again: still refused
        assert door.status()["extender_refused"]
        door.open(now=1e9)             # the address is free now
    try:
        assert door.status() == {"extender_refused": ""}
    finally:
        door.close()


def test_the_tls_settings_make_an_https_listener_and_unusable_files_are_logged(pki, caplog):
    calls = OwnerCalls({}, "kube-scheduler")
    tls = {"SCHEDVIEW_EXTENDER_CERT": str(pki / "server.pem"),
           "SCHEDVIEW_EXTENDER_KEY": str(pki / "server.key"),
           "SCHEDVIEW_EXTENDER_CLIENT_CA": str(pki / "ca.pem")}
    for unusable in ({"SCHEDVIEW_EXTENDER_CERT": str(pki / "missing.pem")},
                     {"SCHEDVIEW_EXTENDER_KEY": str(pki / "client.key")}):   # not its key
        with override_settings(SCHEDVIEW_EXTENDER_ADDRESS="127.0.0.1:0", **{**tls, **unusable}):
            assert listen_for_scheduler(calls) is None
    assert caplog.text.count("cannot serve kube-scheduler's extender") == 2
    with override_settings(SCHEDVIEW_EXTENDER_ADDRESS="127.0.0.1:0", **tls):
        listener = listen_for_scheduler(calls)
    try:
        assert listener.url.startswith("https://127.0.0.1:")
    finally:
        listener.close()


@pytest.mark.parametrize("bound, settled", [(True, "pod_binding_finished"),
                                            (False, "pod_forgotten")])
def test_the_extenders_changes_carry_its_cause_and_its_caller(owner, bound, settled):
    """Through the owner's doors: the assumption a filter makes and the bind's outcome are
    recorded with the cause "extender" and the caller the listener named."""
    pod = make_pod("web", uid="uid-web", requests={"cpu": "1"})
    owner.feed.put(watched("pods", "ADDED", pod))
    owner.drain_feed()
    owner.journal.take()
    verbs, caller = owner.scheduler_verbs, "CN=kube-scheduler"
    result = verbs["extender_filter"](filter_args(pod, [make_node("n1"), make_node("n2")]),
                                      caller)
    [node] = result["NodeNames"]
    plan = verbs["extender_bind"](bind_args(pod, node), caller)
    assert plan.pod == ("uid-web", pod["metadata"]["namespace"], "web", node)
    verbs["extender_bind_outcome"]({"uid": "uid-web", "node": node, "bound": bound,
                                    "reason": "" if bound else "refused (test)"}, caller)
    events, _, batch = owner.journal.take()
    assert [(e.kind, cause, actor) for e, cause, actor, _, _ in events
            if e.kind != "snapshot_updated"] == [("pod_assumed", "extender", caller),
                                                 (settled, "extender", caller)]
    # a refused Binding's answer is the forgotten pod's cause, on its timeline (issue 23)
    assert [d for e, _, _, _, d in events if e.kind == settled] == \
        ["" if bound else "refused (test)"]
    # what the algorithm's snapshot in the filter emitted: the call's too
    assert {(cause, actor) for e, cause, actor, _, _ in events} == {("extender", caller)}
    assert batch.audits == []        # kube-scheduler's acts are its own to log


def test_a_filter_for_a_pod_the_watch_brings_a_moment_later_is_answered_by_the_loop(owner):
    """Issue 23 item 3, as the runner wires it: the call is parked while the owner's loop
    goes on applying the feed, and answered in the turn after the watch shows the pod."""
    calls = OwnerCalls(owner.scheduler_verbs, "kube-scheduler",
                       seen=lambda uid: owner.watched_pod(uid) is not None, unseen_wait=30)
    deadlines = {"flush": NEVER, "snapshot": NEVER, "renew": NEVER}
    pod = make_pod("fit-0", uid="5c1e7a3e-2b7f-4d0a-9b1e-0c4f6a7d8e90", requests={"cpu": "1"})
    answers = []
    caller = threading.Thread(target=lambda: answers.append(calls.call(
        "extender_filter", filter_args(pod, [make_node("n1"), make_node("n2")]), 5)))
    caller.start()
    assert calls.wait(5)
    step(owner, deadlines, None, calls=calls)
    assert calls.parked == 1 and caller.is_alive()   # the loop went on; the call waits
    owner.feed.put(watched("pods", "ADDED", pod))    # the watch shows it
    step(owner, deadlines, None, calls=calls)        # applies it
    step(owner, deadlines, None, calls=calls)        # answers the parked call
    caller.join(5)
    assert len(answers[0]["NodeNames"]) == 1 and owner.cache.is_assumed_pod(pod)


@pytest.mark.parametrize("shown", [True, False], ids=["shown a moment later", "never shown"])
def test_over_http_an_unseen_pod_is_answered_once_shown_or_refused_after_the_wait(
        owner, served, caplog, shown):
    """kube-scheduler's filter over the real listener while the owner's loop runs in its
    thread: parked, the loop goes on; answered when the feed brings the pod, else a 400
    after the wait, logged with the verb, the pod and why."""
    caplog.set_level(logging.WARNING, "dashboard.owner.extender.answers")
    calls = OwnerCalls(owner.scheduler_verbs, "kube-scheduler",
                       seen=lambda uid: owner.watched_pod(uid) is not None, unseen_wait=1.0)
    deadlines = {"flush": NEVER, "snapshot": NEVER, "renew": NEVER}
    served(lambda: step(owner, deadlines, None, calls=calls))
    uid = "0d3f5a9e-6c1b-4e2a-8f7d-3b9c1e5a7d20"
    pod = make_pod("fit-1", uid=uid, requests={"cpu": "1"})
    listener = ExtenderListener("127.0.0.1:0", calls, 5.0, post_binding=None).start()
    answered = []
    try:
        caller = threading.Thread(target=lambda: answered.append(post(
            connect(listener), "filter", filter_args(pod, [make_node("n1"), make_node("n2")]))))
        caller.start()
        wait_for(lambda: calls.parked == 1, 5, "the filter to be parked")
        if shown:
            owner.feed.put(watched("pods", "ADDED", pod))
        caller.join(10)
    finally:
        listener.close()
    status, result = answered[0]
    if shown:
        assert status == 200 and len(result["NodeNames"]) == 1
        assert owner.cache.is_assumed_pod(pod)
    else:
        assert status == 400 and result["Error"].endswith(
            "the owner's watch did not show it within 1 s")
        assert f"extender filter refused (pod default/fit-1 ({uid})): pod default/fit-1" \
            in caplog.text


@pytest.mark.parametrize("held, posted", [(True, True), (False, False)])
def test_the_listeners_binds_are_posted_only_while_the_lease_is_held(held, posted):
    """An owner frozen between the bind verb's assume and its POST wakes with its lease in
    doubt (or lost): the Binding is not posted, and kube-scheduler hears it failed."""
    sent = []

    def post(*pod):
        sent.append(pod)
        return FINISH, ""
    outcome = fenced_binding(post, lambda: held)("u", "ns", "p", "n")
    assert sent == ([("u", "ns", "p", "n")] if posted else [])
    assert outcome[0] == (FINISH if posted else FORGET)
