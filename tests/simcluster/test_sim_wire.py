"""Byte-level comparisons with the kube-apiserver captures (headers, bodies, framing)."""

import http.client
import re
import socket
from urllib.parse import urlsplit

import orjson

from tests.simcluster.simhelpers import capture, pending_pod_body


def header_names(raw_headers: bytes) -> list:
    lines = raw_headers.decode().split("\r\n")[1:]
    return [line.split(":", 1)[0] for line in lines if line]


def raw_exchange(url: str, request: bytes) -> bytes:
    """Send one raw HTTP/1.1 request and read until the server ends the response."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as s:
        s.sendall(request)
        data = b""
        while not (data.endswith(b"0\r\n\r\n") or (b"Content-Length" in data and _complete(data))):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    return data


def _complete(data: bytes) -> bool:
    head, _, body = data.partition(b"\r\n\r\n")
    m = re.search(rb"Content-Length: (\d+)", head)
    return m is not None and len(body) >= int(m.group(1))


def get(path: str) -> bytes:
    return (f"GET {path} HTTP/1.1\r\nHost: x\r\nAccept: application/json\r\n"
            "User-Agent: OpenAPI-Generator/37.0.1/python\r\n\r\n").encode()


def test_headers_and_404_body_match_the_capture(sim):
    data = raw_exchange(sim.url, get("/api/v1/namespaces/wire/pods/wire-does-not-exist"))
    head, _, body = data.partition(b"\r\n\r\n")
    want_head = capture("60-error-get-missing-pod-404.response-headers.txt")
    assert head.split(b"\r\n")[0] == b"HTTP/1.1 404 Not Found"
    assert header_names(head) == header_names(want_head)
    assert b"Cache-Control: no-cache, private" in head
    assert body == capture("60-error-get-missing-pod-404.body.json")


def test_large_bodies_are_chunked_small_ones_are_not(sim, raw):
    resp, body = raw.call("GET", "/api/v1/namespaces/default/pods")
    assert resp.getheader("Content-Length") == str(len(body)) and body.endswith(b"]}\n")
    resp, body = raw.call("GET", "/api/v1/pods")
    assert resp.getheader("Transfer-Encoding") == "chunked"
    assert resp.getheader("Content-Length") is None
    assert body.startswith(b'{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"')
    assert body.endswith(b"]}\n") and len(orjson.loads(body)["items"]) == 150


def test_version_and_error_bodies_are_identical_to_the_captures(sim, raw):
    assert raw.call("GET", "/version")[1] == capture("00-version.body.json")
    resp, body = raw.call("GET", "/api/v1/namespaces/wire/pods?resourceVersion=1"
                                 "&resourceVersionMatch=Exact")
    assert resp.status == 410 and body == capture("97-list-pods-rv1-exact.body.json")
    raw.call("POST", "/api/v1/namespaces/default/pods", pending_pod_body("wire-pod-full"))
    resp, body = raw.call("PATCH", "/api/v1/namespaces/default/pods/wire-pod-full",
                          {"metadata": {"labels": {"a": "b"}}},
                          {"Content-Type": "application/json"})
    assert resp.status == 415
    assert body == capture("83-error-patch-wrong-content-type-415.body.json")
    resp, body = raw.call("POST", "/api/v1/namespaces/wire-nope/pods", pending_pod_body("x"))
    assert body == capture("65-error-create-in-missing-namespace-404.body.json")


def test_binding_bodies_are_identical_to_the_captures(sim, raw):
    raw.call("POST", "/api/v1/namespaces/default/pods", pending_pod_body("wire-watch"))
    binding = {"metadata": {"name": "wire-watch"}, "target": {"name": "wire-node-1"}}
    resp, body = raw.call("POST", "/api/v1/namespaces/default/pods/wire-watch/binding", binding)
    assert resp.status == 201 and body == capture("43-binding-create-201.body.json")
    resp, body = raw.call("POST", "/api/v1/namespaces/default/pods/wire-watch/binding", binding)
    assert resp.status == 409 and body == capture("44-binding-again-409.body.json")
    resp, body = raw.call("POST", "/api/v1/namespaces/default/pods/wire-nosuchpod/binding",
                          {**binding, "metadata": {"name": "wire-nosuchpod"}})
    assert resp.status == 404 and body == capture("45-binding-missing-pod-404.body.json")
    resp, body = raw.call("POST", "/api/v1/namespaces/default/pods/wire-pod-5/binding", binding)
    assert resp.status == 400 and body == capture("46d-binding-name-mismatch.body.json")


def test_conflict_bodies_are_identical_to_the_captures(sim, raw):
    _, created = raw.call("POST", "/api/v1/namespaces/default/pods",
                          pending_pod_body("wire-pod-2"))
    resp, body = raw.call("POST", "/api/v1/namespaces/default/pods",
                          pending_pod_body("wire-pod-2"))
    assert body == capture("62-error-create-existing-409.body.json")
    pod = orjson.loads(created)
    raw.call("PUT", "/api/v1/namespaces/default/pods/wire-pod-2",
             {**pod, "metadata": {**pod["metadata"], "labels": {"cas": "first"}}})
    resp, body = raw.call("PUT", "/api/v1/namespaces/default/pods/wire-pod-2", pod)
    assert resp.status == 409 and body == capture("63c-error-put-stale-rv-409.body.json")


def test_watch_framing_one_event_per_chunk_then_final_chunk(sim, raw):
    sim.settings.bookmark_interval = 0.2
    _, listed = raw.call("GET", "/api/v1/namespaces/default/pods")
    rv = orjson.loads(listed)["metadata"]["resourceVersion"]
    raw.call("POST", "/api/v1/namespaces/default/pods", pending_pod_body("wire-watch"))
    data = raw_exchange(sim.url, get(f"/api/v1/namespaces/default/pods?allowWatchBookmarks=true"
                                     f"&resourceVersion={rv}&timeoutSeconds=1&watch=true"))
    head, _, body = data.partition(b"\r\n\r\n")
    assert header_names(head) == header_names(capture("40-watch-pods.response-headers.txt"))
    chunks = []
    while body:
        size, _, rest = body.partition(b"\r\n")
        n = int(size, 16)
        chunks.append(rest[:n])
        assert rest[n:n + 2] == b"\r\n"
        body = rest[n + 2:]
    assert chunks[-1] == b""  # the final 0-chunk at the timeout
    events = chunks[:-1]
    assert all(c.endswith(b"}\n") and c.count(b"\n") == 1 for c in events)
    assert orjson.loads(events[0])["type"] == "ADDED"
    bookmark = events[-1]
    want = capture("40-watch-pods-wire-framing.chunked-raw.txt").split(b"\r\n")[-4]
    assert re.sub(rb'"resourceVersion":"\d+"', b"RV", bookmark) == \
        re.sub(rb'"resourceVersion":"\d+"', b"RV", want)


def test_node_bookmark_shape_matches_the_capture(sim, raw):
    sim.settings.bookmark_interval = 0.1
    _, body = raw.call("GET", "/api/v1/nodes?allowWatchBookmarks=true&resourceVersion="
                              f"{sim.resource_version}&timeoutSeconds=1&watch=true")
    line = body.splitlines(keepends=True)[0]
    want = capture("50-watch-nodes.jsonl").splitlines(keepends=True)[-1]
    assert re.sub(rb'"\d+"', b"RV", line) == re.sub(rb'"\d+"', b"RV", want)


def test_too_old_watch_is_200_with_one_error_event_and_closes(sim):
    data = raw_exchange(sim.url, get("/api/v1/namespaces/wire/pods?allowWatchBookmarks=true"
                                     "&resourceVersion=1&timeoutSeconds=20&watch=true"))
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK") and b"Transfer-Encoding: chunked" in head
    want = capture("95c-watch-pods-rv1-too-old-wire-framing.chunked-raw.txt")
    event = want.split(b"\r\n")[1]
    assert want == b"%x\r\n%s\r\n0\r\n\r\n" % (len(event), event)
    oldest = sim.store.resources["pods"].compacted_rv + 1
    ours = re.sub(rb"\(\d+\)", b"(%d)" % oldest, event)
    assert body == b"%x\r\n%s\r\n0\r\n\r\n" % (len(ours), ours)


def test_expired_continue_token_offers_an_inconsistent_one(sim, raw):
    _, page = raw.call("GET", "/api/v1/namespaces/kube-system/pods?limit=2")
    token = orjson.loads(page)["metadata"]["continue"]
    raw.call("POST", "/api/v1/namespaces/default/pods", pending_pod_body("sooner"))
    sim.compact()
    raw.call("POST", "/api/v1/namespaces/default/pods", pending_pod_body("later"))
    resp, body = raw.call("GET", f"/api/v1/namespaces/kube-system/pods?limit=2&continue={token}")
    assert resp.status == 410
    status = orjson.loads(body)
    want = orjson.loads(capture("99-list-continue-token-compacted-410.body.json"))
    assert {k: v for k, v in status.items() if k != "metadata"} == \
        {k: v for k, v in want.items() if k != "metadata"}
    resp, body = raw.call("GET", "/api/v1/namespaces/kube-system/pods?limit=2&continue="
                          + status["metadata"]["continue"])
    assert resp.status == 200
    first_page = [p["metadata"]["name"] for p in orjson.loads(page)["items"]]
    rest = [p["metadata"]["name"] for p in orjson.loads(body)["items"]]
    assert rest and rest[0] > first_page[-1]


def test_client_style_bodies_without_content_type_are_accepted(sim):
    parts = urlsplit(sim.url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port)
    conn.putrequest("POST", "/api/v1/namespaces/default/pods", skip_accept_encoding=True)
    body = orjson.dumps(pending_pod_body("no-ct"))
    conn.putheader("Content-Length", str(len(body)))
    conn.endheaders(body)
    resp = conn.getresponse()
    assert resp.status == 201 and orjson.loads(resp.read())["metadata"]["name"] == "no-ct"
    conn.close()


def test_watch_list_streams_the_state_then_says_so_then_watches(sim, raw):
    # capture 58: sendInitialEvents=true&resourceVersionMatch=NotOlderThan answers an
    # ADDED per object, then a BOOKMARK annotated k8s.io/initial-events-end, then changes
    raw.call("POST", "/api/v1/namespaces/default/pods", pending_pod_body("wl-1"))
    names = [p["metadata"]["name"] for p in sim.pods("default")]
    query = ("allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan"
             "&sendInitialEvents=true&timeoutSeconds=1&watch=true")
    conn, resp = raw.request("GET", f"/api/v1/namespaces/default/pods?{query}")
    lines = [resp.readline()]   # http.client de-chunks: one event a line
    while orjson.loads(lines[-1])["type"] != "BOOKMARK":
        lines.append(resp.readline())
    raw.call("POST", "/api/v1/namespaces/default/pods", pending_pod_body("wl-2"))
    rest = resp.read().splitlines(keepends=True)
    conn.close()

    *added, end = lines
    assert [orjson.loads(line)["type"] for line in added] == ["ADDED"] * len(names)
    assert [orjson.loads(line)["object"]["metadata"]["name"] for line in added] == names
    want = capture("58-watch-pods-sendInitialEvents.jsonl").splitlines(keepends=True)[-1]
    assert re.sub(rb'"resourceVersion":"\d+"', b"RV", end) == \
        re.sub(rb'"resourceVersion":"\d+"', b"RV", want)
    assert orjson.loads(end)["object"]["metadata"]["resourceVersion"] == \
        orjson.loads(added[-1])["object"]["metadata"]["resourceVersion"]   # wl-1: the latest
    assert [(e["type"], e["object"]["metadata"].get("name")) for e in map(orjson.loads, rest)
            if e["type"] != "BOOKMARK"] == [("ADDED", "wl-2")]
