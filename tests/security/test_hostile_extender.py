"""The hostile sweep over kube-scheduler's extender verbs, on the cache owner's own listener
(the `manage.py watch` process, over plain HTTP as kube-scheduler calls it): malformed and
nested bodies, wrong types, unknown fields, hostile text in every field, 50 MB, broken
HTTP. Every request gets an answer (never a dropped connection), none a 5xx, and the
owner's cache is unchanged. Clients that send slowly cannot stall kube-scheduler's calls."""
import http.client
import json
import socket
import threading
import time

import orjson
import pytest

from dashboard.clients.owner_client import send
from dashboard.owner.extender.listener import CLIENT_DEADLINE
from tests.security.hostile import STRINGS, bodies, field_bodies
from tests.waiting import wait_for

pytestmark = [pytest.mark.live, pytest.mark.timeout(300)]

BUDGET = 120
VERB_FIELDS = {"filter": ["Pod", "Nodes", "NodeNames"],
               "bind": ["PodName", "PodNamespace", "PodUID", "Node"],
               "preempt": ["Pod", "NodeNameToVictims", "NodeNameToMetaVictims"]}


def address(stack) -> tuple[str, int]:
    host, port = stack.env["SCHEDVIEW_EXTENDER_ADDRESS"].rsplit(":", 1)
    return host, int(port)


def cache_counts():
    status = send("status", timeout=5)
    return {key: status[key] for key in ("pods", "assumed", "pending", "nodes")}


def hostile_pods():
    """Pod objects whose metadata and spec carry hostile values (no pod the cache has)."""
    for value in STRINGS:
        yield {"metadata": {"uid": value, "name": value, "namespace": value},
               "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": value}}}],
                        "priority": value, "nodeName": value}}
    yield {"metadata": {"uid": 1, "name": [], "namespace": {}}, "spec": "none"}
    yield {"metadata": None, "spec": {"containers": "x" * 1000}}


def requests_of(verb: str):
    for what, body in bodies() + field_bodies(VERB_FIELDS[verb]):
        yield what, body
    if verb in ("filter", "preempt"):
        for pod in hostile_pods():
            yield f"pod {str(pod['metadata'])[:30]}", json.dumps(
                {"Pod": pod, "NodeNames": ["n1", "\x00", "<script>"], "Nodes": None,
                 "NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": "\x00"}]}}}).encode()


def test_no_hostile_extender_call_fails_or_changes_the_cache(live_cluster):
    stack, _ = live_cluster
    before = cache_counts()
    host, port = address(stack)
    failures, started = [], time.monotonic()
    connection = http.client.HTTPConnection(host, port, timeout=10)
    for verb in [*VERB_FIELDS, "unknown"]:
        for what, body in requests_of(verb if verb in VERB_FIELDS else "bind"):
            try:
                connection.request("POST", f"/extender/{verb}", body=body,
                                   headers={"Content-Type": "application/json"})
                response = connection.getresponse()
                answer = response.read()
            except (http.client.HTTPException, OSError) as error:
                failures.append(f"{verb} {what}: no answer ({error!r})")
                connection = http.client.HTTPConnection(host, port, timeout=10)
                continue
            if response.status >= 500:
                failures.append(f"{verb} {what}: {response.status} {answer[:100]!r}")
            elif not isinstance(orjson.loads(answer), dict):
                failures.append(f"{verb} {what}: not a JSON object")
            if response.getheader("Connection", "").lower() == "close":
                connection = http.client.HTTPConnection(host, port, timeout=10)
        assert time.monotonic() - started < BUDGET, f"the sweep took over {BUDGET} s"
    assert failures == [], f"{len(failures)} bad answers, first: {failures[:20]}"
    assert cache_counts() == before


def answer_status(stack, request: bytes) -> int:
    """The status of the answer to raw bytes (one answer is read: a kept connection does
    not end)."""
    with socket.create_connection(address(stack), timeout=10) as sock:
        sock.sendall(request)
        answer = http.client.HTTPResponse(sock)
        answer.begin()
        return answer.status


BROKEN = {
    "huge length": b"Content-Length: " + b"9" * 30 + b"\r\n\r\n{}",
    "negative length": b"Content-Length: -5\r\n\r\n{}",
    "non-ASCII digits": "Content-Length: \u0661\u0662\r\n\r\n{}".encode(),
    "chunked": b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "no length": b"\r\n",
    "50 GB declared": b"Content-Length: " + b"5" * 11 + b"\r\n\r\n",
}


def test_broken_http_gets_a_4xx_answer(live_cluster):
    """One stack for every case (each would cost a cluster and an owner)."""
    stack = live_cluster[0]
    before = cache_counts()
    statuses = {what: answer_status(stack, b"POST /extender/filter HTTP/1.1\r\nHost: x\r\n"
                                    + rest)
                for what, rest in BROKEN.items()}
    statuses["garbage"] = answer_status(stack, b"GARBAGE\r\n\r\n")
    statuses["long line"] = answer_status(stack, b"POST /extender/" + b"x" * 70_000
                                          + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    assert {what: status // 100 for what, status in statuses.items()} == {
        what: 4 for what in statuses}, statuses
    connection = http.client.HTTPConnection(*address(stack), timeout=30)
    try:
        connection.request("POST", "/extender/filter", body=b"x" * (50 * 1024 * 1024),
                           headers={"Content-Type": "application/json"})
        assert connection.getresponse().status == 413
    except (BrokenPipeError, ConnectionResetError):
        pass   # refused (the 50 GB case above read its 413) and closed mid-body
    assert cache_counts() == before


def trickler(where, stop: threading.Event, kept: list) -> None:
    """A slow-loris client from another address than kube-scheduler's: it sends a request
    a byte every half second (the pace is its behaviour, not a wait), and opens another
    connection whenever the listener cuts one; `kept` gets each connection's seconds."""
    request = b"POST /extender/filter HTTP/1.1\r\nX-Slow: " + b"y" * 1000
    while not stop.is_set():
        began = time.monotonic()
        try:
            with socket.create_connection(where, timeout=10,
                                          source_address=("127.0.0.2", 0)) as sock:
                for byte in request:
                    sock.sendall(bytes([byte]))
                    if stop.wait(0.5):
                        break
        except OSError:
            pass
        kept.append(time.monotonic() - began)


def test_150_trickling_connections_do_not_stall_kube_schedulers_calls(live_cluster):
    """The issue's attack on the real listener: 150 connections trickling requests (each
    byte well within any socket timeout), then kube-scheduler's filters for a real pending
    pod, one after another over more than a deadline: each answered at once, and no
    trickling connection kept past the deadline."""
    stack, api = live_cluster
    api.create_namespaced_pod("default", {"apiVersion": "v1", "kind": "Pod",
                                          "metadata": {"name": "waiting"},
                                          "spec": {"containers": [{"name": "c",
                                                                   "image": "pause"}]}})
    wait_for(lambda: send("status", timeout=5)["pending"] >= 1, 30, "the pod in the cache")
    stack.extender()                          # listening (it opens once the owner leads)
    pod = api.api_client.sanitize_for_serialization(
        api.read_namespaced_pod("waiting", "default"))
    names = [node.metadata.name for node in api.list_node().items]
    body = orjson.dumps({"Pod": pod, "Nodes": None, "NodeNames": names})
    where = address(stack)
    stop, kept = threading.Event(), []
    attackers = [threading.Thread(target=trickler, args=(where, stop, kept))
                 for _ in range(150)]
    for thread in attackers:
        thread.start()
    waits = []
    try:
        # Over the cap the listener closes at once: those have come and gone already.
        wait_for(lambda: len(kept) >= 150 - 64, 30, "connections over the cap to be closed")
        connection = http.client.HTTPConnection(*where, timeout=30)
        until = time.monotonic() + CLIENT_DEADLINE + 2
        while time.monotonic() < until:
            began = time.monotonic()
            connection.request("POST", "/extender/filter", body=body,
                               headers={"Content-Type": "application/json"})
            response = connection.getresponse()
            answer = orjson.loads(response.read())
            waits.append(time.monotonic() - began)
            assert response.status == 200 and answer["NodeNames"], answer
    finally:
        stop.set()
        for thread in attackers:
            thread.join(15)
    assert len(waits) >= 7 and max(waits) < 1.0, (len(waits), max(waits))
    assert max(kept) < CLIENT_DEADLINE + 2, max(kept)
