"""The hostile sweep over kube-scheduler's extender verbs, on the cache owner's own listener
(the `manage.py watch` process, over plain HTTP as kube-scheduler calls it): malformed and
nested bodies, wrong types, unknown fields, hostile text in every field, 50 MB, broken
HTTP. Every request gets an answer (never a dropped connection), none a 5xx, and the
owner's cache is unchanged."""
import http.client
import json
import socket
import time

import orjson
import pytest

from dashboard.feed.commands import send
from hostile import STRINGS, bodies, field_bodies

pytestmark = pytest.mark.timeout(300)

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


def raw_exchange(stack, request: bytes) -> bytes:
    with socket.create_connection(address(stack), timeout=10) as sock:
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


@pytest.mark.parametrize("request_bytes", [
    b"POST /extender/filter HTTP/1.1\r\nHost: x\r\nContent-Length: " + b"9" * 30 + b"\r\n\r\n{}",
    b"POST /extender/filter HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n{}",
    b"POST /extender/filter HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    b"POST /extender/filter HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GARBAGE\r\n\r\n",
    b"POST /extender/" + b"x" * 70_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
    b"POST /extender/filter HTTP/1.1\r\nHost: x\r\nContent-Length: " + b"5" * 10 + b"\r\n\r\n",
], ids=["huge length", "negative length", "chunked", "no length", "garbage", "long line",
        "50 GB declared"])
def test_broken_http_gets_a_4xx_answer(live_cluster, request_bytes):
    before = cache_counts()
    answer = raw_exchange(live_cluster[0], request_bytes)
    assert answer.startswith(b"HTTP/1."), answer[:100]
    assert answer.split(b" ", 2)[1].startswith(b"4"), answer[:100]
    assert cache_counts() == before


def test_a_non_ascii_digit_length_gets_an_answer(live_cluster):
    answer = raw_exchange(live_cluster[0], "POST /extender/filter HTTP/1.1\r\nHost: x\r\n"
                          "Content-Length: ١٢\r\n\r\n{}".encode())
    assert answer.split(b" ", 2)[1].startswith(b"4"), answer[:100]


def test_fifty_megabytes_are_refused_with_a_413(live_cluster):
    before = cache_counts()
    connection = http.client.HTTPConnection(*address(live_cluster[0]), timeout=30)
    try:
        connection.request("POST", "/extender/filter", body=b"x" * (50 * 1024 * 1024),
                           headers={"Content-Type": "application/json"})
        status = connection.getresponse().status
    except (BrokenPipeError, ConnectionResetError):
        status = None      # refused and closed before the whole body was sent
    assert status in (413, None)
    if status is None:     # then the refusal was answered before the close
        answer = raw_exchange(live_cluster[0], b"POST /extender/filter HTTP/1.1\r\nHost: x\r\n"
                              b"Content-Length: 52428800\r\n\r\n")
        assert answer.split(b" ", 2)[1] == b"413"
    assert cache_counts() == before
