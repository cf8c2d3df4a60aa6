"""The owner's own extender listener, driven over real HTTP as kube-scheduler drives it:
kept-alive connections, the extender API's JSON, the web's error rules, bad requests, an
owner too busy to answer in time, TLS with and without client certificates, and a clean
stop."""
import socket
import threading
import time

import orjson
import pytest

from dashboard.kube.binding import FINISH
from dashboard.owner.extender import listener as listener_module
from dashboard.owner.extender.handlers import verb_handlers
from dashboard.owner.extender.listener import ExtenderListener
from dashboard.owner.extender.listener_app import http_date
from dashboard.owner.extender.listener_tls import ExtenderTLS
from dashboard.owner.extender.owner_calls import OwnerCalls
from tests.dashboard.owner.extender.extender_builders import (
    Bindings,
    bind_args,
    filter_args,
    preempt_args,
    result_names,
)
from tests.dashboard.owner.extender.listener_client import connect, post, raw_exchange
from tests.waiting import wait_for


@pytest.fixture
def calls(world):
    return OwnerCalls(verb_handlers(world.extender), "kube-scheduler")


@pytest.fixture
def bindings():
    return Bindings()


@pytest.fixture
def listen(calls, bindings):
    """listen(timeout=5, max_body=...) -> a started listener on a free port, closed after."""
    started = []

    def start(timeout=5.0, **options):
        options.setdefault("post_binding", bindings)
        listener = ExtenderListener("127.0.0.1:0", calls, timeout, **options).start()
        started.append(listener)
        return listener
    yield start
    for listener in started:
        listener.close()


@pytest.fixture
def owner(world, calls, served):
    """The owner's thread: serves the listener's calls, waking when one arrives."""
    served(lambda: calls.serve() or calls.wait(0.05))
    return world


def test_filter_then_bind_on_one_kept_alive_connection(owner, listen, bindings):
    listener = listen()
    nodes = [owner.node("n1"), owner.node("n2")]
    pods = [owner.pod(f"web-{i}", requests={"cpu": "1"}) for i in range(3)]
    connection = connect(listener)
    status, result = post(connection, "filter", filter_args(pods[0], nodes))
    sock = connection.sock                    # None had the listener closed it
    assert sock is not None
    assert status == 200 and result["Error"] == "" and result["Nodes"] is None
    for pod in pods[1:]:
        assert post(connection, "filter", filter_args(pod, nodes))[0] == 200
    for pod in pods:
        node = owner.cache.get_pod(pod)["spec"]["nodeName"]
        assert post(connection, "bind", bind_args(pod, node)) == (200, {"Error": ""})
    assert connection.sock is sock            # every call went on the first connection
    assert [c[0] for c in bindings.posted] == [p["metadata"]["uid"] for p in pods]
    assert all(owner.statuses.state(p["metadata"]["uid"]) == "Binding" for p in pods)


def test_a_prompt_next_request_is_served_by_the_worker_that_answered_the_last(owner, listen):
    """kube-scheduler's next call on a connection comes within LINGER: the same worker
    reads it (no hop to cheroot's selector and on to another worker)."""
    workers = []

    def post_binding(*pod):
        workers.append(threading.current_thread().name)
        return FINISH, "bound"
    listener = listen(post_binding=post_binding)
    nodes = [owner.node("n1")]
    pods = [owner.pod(f"web-{i}", requests={"cpu": "1"}) for i in range(4)]
    connection = connect(listener)
    for pod in pods:
        assert post(connection, "filter", filter_args(pod, nodes))[0] == 200
        assert post(connection, "bind", bind_args(pod, "n1")) == (200, {"Error": ""})
    assert len(workers) == 4 and len(set(workers)) == 1


def test_binds_waiting_on_the_api_server_leave_workers_for_the_filter(owner, listen,
                                                                      bindings):
    """kube-scheduler binds each pod in a goroutine of its own, and a bind holds its worker
    while the API server answers its Binding: 32 such binds, and a filter is answered."""
    sent, release = threading.Semaphore(0), threading.Event()

    def slow_api_server(*binding):
        sent.release()
        release.wait(10)
        return bindings(*binding)
    listener = listen(post_binding=slow_api_server)
    nodes = [owner.node(f"n{i}") for i in range(4)]
    pods = [owner.pod(f"web-{i}", requests={"cpu": "100m"}) for i in range(32)]
    connection = connect(listener)
    for pod in pods:
        assert post(connection, "filter", filter_args(pod, nodes))[0] == 200
    binds = [threading.Thread(target=post, args=(
        connect(listener), "bind", bind_args(pod, owner.cache.get_pod(pod)["spec"]["nodeName"])))
        for pod in pods]
    try:
        for bind in binds:
            bind.start()
        assert all(sent.acquire(timeout=10) for _ in binds)   # all with the API server
        connection.sock.settimeout(5)
        status, result = post(connection, "filter",
                              filter_args(owner.pod("late", requests={"cpu": "100m"}), nodes))
        assert status == 200 and len(result["NodeNames"]) == 1
    finally:
        release.set()
        for bind in binds:
            bind.join(10)
    assert len(bindings.posted) == len(pods)


def test_filter_with_whole_nodes_answers_the_node_as_sent(owner, listen):
    nodes = [owner.node("n1")]
    pod = owner.pod("web", requests={"cpu": "1"})
    status, result = post(connect(listen()), "filter", filter_args(pod, nodes, False))
    assert status == 200 and result["NodeNames"] is None
    assert result["Nodes"]["items"] == [owner.nodes["n1"]]


def test_wait_reasons_and_preemption_victims(owner, listen):
    connection = connect(listen())
    nodes = [owner.node("n1")]
    low = owner.running("low", "n1", requests={"cpu": "3"}, priority=1)
    vip = owner.pod("vip", requests={"cpu": "3"}, priority=100)
    status, result = post(connection, "filter", filter_args(vip, nodes))
    assert status == 200 and result_names(result) == [] and "n1" in result["FailedNodes"]
    status, answer = post(connection, "preempt", preempt_args(vip, {"n1": ["uid-low"]}))
    assert status == 200
    assert answer["NodeNameToMetaVictims"]["n1"]["Pods"] == [{"UID": low["metadata"]["uid"]}]


@pytest.mark.parametrize("body,message", [
    (b"{not json", "not JSON"),
    (b"[1, 2]", "JSON object"),
    (orjson.dumps({"Pod": {"metadata": {}}, "NodeNames": ["n1"]}), "uid"),
])
def test_malformed_bodies_are_400_and_change_nothing(owner, listen, body, message):
    owner.node("n1")
    before = owner.state()
    connection = connect(listen())
    status, result = post(connection, "filter", body)
    assert status == 400 and message in result["Error"]
    assert owner.state() == before
    assert post(connection, "bind", {"PodName": "x", "PodNamespace": "default",
                                     "PodUID": "no-such-uid", "Node": "n1"})[0] == 400
    assert owner.state() == before


def test_unknown_path_is_404_and_other_methods_405(owner, listen):
    listener = listen()
    status, result = post(connect(listener), "schedule", {})
    assert status == 404 and "no extender verb at /extender/schedule" in result["Error"]
    # A body larger than the sockets' buffers is read before the answer: the client,
    # still sending it, is not reset.
    assert post(connect(listener), "schedule", b"x" * (16 << 20))[0] == 404
    assert post(connect(listener), "filter", {}, prefix="/api/v1/extender/")[0] == 404
    connection = connect(listener)
    connection.request("GET", "/extender/filter")
    response = connection.getresponse()
    assert response.status == 405 and response.getheader("Allow") == "POST"
    assert response.getheader("Content-Type") == "application/json"
    assert response.getheader("Connection") == "close"
    assert "GET is not allowed" in orjson.loads(response.read())["Error"]
    connection = connect(listener)
    connection.request("HEAD", "/extender/filter")
    response = connection.getresponse()
    assert response.status == 405 and response.read() == b""


def test_malformed_http_is_400_and_closes_the_connection(owner, listen):
    answer, _, kept = raw_exchange(listen(), b"POST /extender/filter HTTP/1.1 what\r\n\r\n")
    assert answer.status == 400 and not kept


@pytest.mark.parametrize("headers,status,ours", [
    (b"Content-Length: 100000\r\n", 413, True),
    (b"", 411, True),
    (b"Content-Length: -5\r\n", 400, True),
    # Not numbers to cheroot either: it refuses them itself, in plain text.
    ("Content-Length: 1\u00b2\r\n".encode("latin-1"), 400, False),  # a digit to str, not int()
    ("Content-Length: \u0663\r\n".encode("utf-8"), 400, False),    # an Arabic-Indic three
])
def test_bodies_too_large_or_without_length_are_refused_unread(owner, listen, headers, status,
                                                                ours):
    owner.node("n1")
    before = owner.state()
    answer, body, kept = raw_exchange(
        listen(max_body=1000), b"POST /extender/filter HTTP/1.1\r\nHost: x\r\n" + headers + b"\r\n")
    assert answer.status == status
    if ours:
        assert answer.getheader("Content-Type") == "application/json"
        assert orjson.loads(body)["Error"]
    assert not kept, "the body is left unread: the connection must close"
    assert owner.state() == before


def test_a_request_line_or_headers_over_64_kib_are_refused(owner, listen):
    listener = listen()
    answer, _, kept = raw_exchange(listener, b"POST /extender/" + b"x" * 70_000
                                   + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    assert answer.status == 414 and not kept
    answer, _, kept = raw_exchange(listener, b"POST /extender/filter HTTP/1.1\r\n"
                                   + b"X-Pad: y\r\n" * 8000 + b"\r\n")
    assert answer.status == 413 and not kept


def _chunked(body: bytes, size: int) -> bytes:
    pieces = [body[i:i + size] for i in range(0, len(body), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"


def test_a_chunked_body_is_read_and_the_connection_kept(owner, listen):
    nodes = [owner.node("n1")]
    pod = owner.pod("web", requests={"cpu": "1"})
    request = (b"POST /extender/filter HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
               b"\r\n" + _chunked(orjson.dumps(filter_args(pod, nodes)), 100))
    answer, body, kept = raw_exchange(listen(), request)
    assert answer.status == 200 and orjson.loads(body)["NodeNames"] == ["n1"]
    assert kept


def test_a_chunked_body_over_the_limit_is_413_and_changes_nothing(owner, listen):
    nodes = [owner.node("n1")]
    pod = owner.pod("web", requests={"cpu": "1"})
    before = owner.state()
    body = orjson.dumps(filter_args(pod, nodes))
    request = (b"POST /extender/filter HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
               b"\r\n" + _chunked(body, 10))
    answer, answered, kept = raw_exchange(listen(max_body=len(body) - 1), request)
    assert answer.status == 413 and "over" in orjson.loads(answered)["Error"]
    assert not kept and owner.state() == before


def test_a_busy_owner_is_a_platform_error_and_the_late_call_never_runs(world, calls, listen):
    """No one serves the calls (the owner is busy): filter answers its error in the body,
    preempt a 500; once the owner is back, the abandoned calls do not run."""
    listener = listen(timeout=0.2)
    nodes = [world.node("n1")]
    pod = world.pod("late", requests={"cpu": "1"})
    before = world.state()
    connection = connect(listener)
    status, result = post(connection, "filter", filter_args(pod, nodes))
    assert status == 200 and "did not take 'extender_filter' within 0.2s" in result["Error"]
    assert result["NodeNames"] is None and result["FailedNodes"] == {}
    assert post(connection, "bind", bind_args(pod, "n1"))[1]["Error"]
    assert post(connection, "preempt", preempt_args(pod, {}))[0] == 500
    assert calls.serve() == 0              # the owner is back: nothing stale is left to run
    assert world.state() == before


def test_a_call_the_owner_took_is_answered_even_past_the_timeout(world, calls):
    started, release = threading.Event(), threading.Event()

    def slow(args, actor):
        started.set()
        release.wait(5)
        return {"slow": True}
    calls.handlers["slow"] = slow
    answers = []
    caller = threading.Thread(target=lambda: answers.append(calls.call("slow", {}, 0.05)))
    caller.start()
    assert calls.wait(5)
    owner = threading.Thread(target=calls.serve)
    owner.start()
    assert started.wait(5)
    caller.join(0.2)                       # well past the call's timeout
    assert caller.is_alive() and answers == []
    release.set()
    caller.join(5)
    owner.join(5)
    assert answers == [{"slow": True}]


def test_a_stopped_owner_answers_queued_and_new_calls_as_unavailable(world, calls, listen):
    listener = listen()
    pod = world.pod("p")
    results = []
    caller = threading.Thread(target=lambda: results.append(
        post(connect(listener), "filter", filter_args(pod, [world.node("n1")]))))
    caller.start()
    assert calls.wait(5)
    calls.close()
    caller.join(5)
    assert results[0][0] == 200 and "has stopped" in results[0][1]["Error"]
    assert "has stopped" in post(connect(listener), "bind", bind_args(pod, "n1"))[1]["Error"]


def test_a_connection_that_says_nothing_holds_its_worker_for_the_deadline_only(
        owner, listen, monkeypatch):
    """cheroot hands a new connection to a worker at once: a silent one holds it until
    CLIENT_DEADLINE, not for the kept-alive connections' IDLE_TIMEOUT."""
    monkeypatch.setattr(listener_module, "CLIENT_DEADLINE", 0.5)
    listener = listen(threads=1)
    nodes = [owner.node("n1")]
    with socket.create_connection(listener.address) as silent:
        connection = connect(listener)
        connection.timeout = 5                 # far under IDLE_TIMEOUT's 120 s
        status, result = post(connection, "filter", filter_args(owner.pod("web"), nodes))
        assert status == 200 and result["NodeNames"] == ["n1"]
        assert silent.recv(100).startswith(b"HTTP/1.1 408 ")


def trickle(sock, data: bytes, pace: float, stop: threading.Event) -> float:
    """Send `data` a byte every `pace` seconds (the pace is the client's behaviour, not a
    wait for anything) until the listener closes the connection or `stop`; returns the
    seconds it was kept."""
    began = time.monotonic()
    for byte in data:
        if stop.wait(pace):
            break
        try:
            sock.sendall(bytes([byte]))
        except OSError:
            break
    return time.monotonic() - began


@pytest.mark.slow   # waits out a deadline, by design
@pytest.mark.parametrize("what", ["headers", "body"])
def test_a_request_sent_a_byte_at_a_time_is_cut_off_at_the_deadline(owner, listen,
                                                                   monkeypatch, what):
    """Each byte comes well within a socket timeout; the request as a whole does not."""
    monkeypatch.setattr(listener_module, "CLIENT_DEADLINE", 1.0)
    listener = listen(threads=1)
    nodes = [owner.node("n1")]
    body = orjson.dumps(filter_args(owner.pod("slow"), nodes))
    head = (b"POST /extender/filter HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
            % len(body))
    before = owner.state()
    stop = threading.Event()
    with socket.create_connection(listener.address) as slow:
        slow.settimeout(10)
        if what == "body":
            slow.sendall(head)
        began = time.monotonic()
        sender = threading.Thread(target=trickle, args=(slow, body if what == "body" else head,
                                                        0.1, stop))
        sender.start()
        try:
            answer = slow.recv(100)
            cut_after = time.monotonic() - began
        finally:
            stop.set()
            sender.join(5)
    assert answer.startswith(b"HTTP/1.1 408 ") and 0.9 < cut_after < 3
    assert owner.state() == before
    # Its one worker is free again.
    assert post(connect(listener), "filter", filter_args(owner.pod("web"), nodes))[0] == 200


@pytest.mark.slow   # waits out a deadline, by design
def test_an_answer_the_client_does_not_take_is_given_up_at_the_deadline(owner, listen,
                                                                       monkeypatch):
    """A client that sends a call whose answer is large (whole Nodes, echoed) and then
    reads nothing holds its worker until CLIENT_DEADLINE, not for as long as it likes."""
    monkeypatch.setattr(listener_module, "CLIENT_DEADLINE", 1.0)
    listener = listen(threads=1)
    node = owner.node("n1")
    pod = owner.pod("web", requests={"cpu": "1"})
    padded = {**node, "metadata": {**node["metadata"],
                                   "annotations": {"pad": "x" * (16 << 20)}}}
    body = orjson.dumps(filter_args(pod, [padded], cache_capable=False))
    with socket.socket() as greedy:
        greedy.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        greedy.settimeout(10)
        greedy.connect(listener.address)
        greedy.sendall(b"POST /extender/filter HTTP/1.1\r\nHost: x\r\nContent-Length: %d"
                       b"\r\n\r\n%s" % (len(body), body))
        began = time.monotonic()
        connection = connect(listener)            # waits for the one worker
        status, _ = post(connection, "filter", filter_args(owner.pod("next"), [node]))
        assert status == 200 and time.monotonic() - began < 1.0 + 2


def test_an_address_holds_at_most_its_share_of_connections(owner, listen):
    """Past `per_address` open connections from one address, a new one is closed as it is
    accepted; other addresses are served, and a closed connection makes room again."""
    listener = listen(per_address=3)
    nodes = [owner.node("n1")]
    held = [socket.create_connection(listener.address, source_address=("127.0.0.2", 0))
            for _ in range(3)]
    try:
        with socket.create_connection(listener.address,
                                      source_address=("127.0.0.2", 0), timeout=5) as over:
            assert over.recv(100) == b""                  # closed, unanswered
        status, _ = post(connect(listener), "filter", filter_args(owner.pod("web"), nodes))
        assert status == 200                              # 127.0.0.1 is another address
        held.pop().close()
        api = owner.pod("api")

        def served_again():
            again = connect(listener)
            again.source_address = ("127.0.0.2", 0)
            try:
                return post(again, "filter", filter_args(api, nodes))[0] == 200
            except OSError:          # refused: the listener has not seen the close yet
                return False
        wait_for(served_again, 10, "room for a connection from 127.0.0.2 again")
    finally:
        for sock in held:
            sock.close()


@pytest.mark.slow   # waits out a deadline, by design
def test_150_trickling_connections_do_not_stall_kube_schedulers_calls(owner, listen,
                                                                     monkeypatch):
    """The issue's attack on a listener of 16 workers, 8 an address (the real one's 128
    and 64, tests/security has it): 150 connections from one address, each sending a
    request a byte at a time and opening another when cut off. 7 filters from
    kube-scheduler's address are each answered at once, and no trickler is kept past the
    deadline."""
    monkeypatch.setattr(listener_module, "CLIENT_DEADLINE", 1.0)
    listener = listen(threads=16, per_address=8)
    nodes = [owner.node(f"n{i}") for i in range(3)]
    stop, kept = threading.Event(), []

    def attacker():
        while not stop.is_set():
            try:
                sock = socket.create_connection(listener.address, timeout=10,
                                                source_address=("127.0.0.2", 0))
            except OSError:
                continue
            with sock:
                kept.append(trickle(sock, b"POST /extender/filter HTTP/1.1\r\n" * 100, 0.2,
                                    stop))
    attackers = [threading.Thread(target=attacker) for _ in range(150)]
    for thread in attackers:
        thread.start()
    try:
        wait_for(lambda: len(kept) >= 150, 30, "the attackers' first connections to be cut")
        connection = connect(listener)
        for i in range(7):
            began = time.monotonic()
            status, result = post(connection, "filter",
                                  filter_args(owner.pod(f"web-{i}"), nodes))
            assert status == 200 and len(result["NodeNames"]) == 1
            assert time.monotonic() - began < 0.5, f"filter {i} waited behind the attack"
    finally:
        stop.set()
        for thread in attackers:
            thread.join(10)
    assert max(kept) < 1.0 + 1.0


# --- TLS: kube-scheduler's tlsConfig, with a client certificate ---------------------------------

def _tls_client(pki, listener, cert=None):
    import http.client
    import ssl
    context = ssl.create_default_context(cafile=str(pki / "ca.pem"))
    if cert:
        context.load_cert_chain(str(pki / f"{cert}.pem"), str(pki / f"{cert}.key"))
    host, port = listener.address
    return http.client.HTTPSConnection(host, port, timeout=10, context=context)


@pytest.fixture
def recorded(world, served):
    """(calls whose handlers record each call's actor, the actors), served."""
    actors = []

    def recording(handler):
        def run(args, actor):
            actors.append(actor)
            return handler(args, actor)
        return run
    calls = OwnerCalls({op: recording(h) for op, h in verb_handlers(world.extender).items()},
                       "kube-scheduler")
    served(lambda: calls.serve() or calls.wait(0.05))
    return calls, actors


@pytest.fixture
def listen_tls(pki, recorded, bindings):
    """listen_tls(client_ca=True) -> a started HTTPS listener, closed after."""
    started = []

    def start(client_ca=True):
        tls = ExtenderTLS(str(pki / "server.pem"), str(pki / "server.key"),
                          str(pki / "ca.pem") if client_ca else "")
        listener = ExtenderListener("127.0.0.1:0", recorded[0], 5.0, post_binding=bindings,
                                    tls=tls)
        started.append(listener)
        return listener.start()
    yield start
    for listener in started:
        listener.close()


def test_with_a_client_ca_only_a_signed_client_certificate_is_served(world, pki, recorded,
                                                                   listen_tls):
    actors = recorded[1]
    listener = listen_tls()
    assert listener.url.startswith("https://")
    nodes = [world.node("n1")]
    pod = world.pod("web", requests={"cpu": "1"})
    for cert in (None, "stranger"):
        with pytest.raises(OSError):        # the handshake is refused
            post(_tls_client(pki, listener, cert), "filter", filter_args(pod, nodes))
    assert actors == [] and "uid-web" not in world.statuses
    connection = _tls_client(pki, listener, "client")
    status, result = post(connection, "filter", filter_args(pod, nodes))
    assert status == 200 and result["NodeNames"] == ["n1"]
    assert post(connection, "bind", bind_args(pod, "n1")) == (200, {"Error": ""})
    assert actors == ["kube-scheduler (kube-scheduler)"] * 3   # filter, bind's plan, outcome


def test_without_a_client_ca_any_client_is_served_and_named_by_its_address(world, pki,
                                                                          recorded, listen_tls):
    listener = listen_tls(client_ca=False)
    nodes = [world.node("n1")]
    for name, cert in (("web", None), ("api", "stranger")):
        pod = world.pod(name, requests={"cpu": "1"})
        assert post(_tls_client(pki, listener, cert), "filter",
                    filter_args(pod, nodes))[1]["NodeNames"] == ["n1"]
    assert recorded[1] == ["kube-scheduler at 127.0.0.1"] * 2


def test_plain_http_to_the_tls_listener_is_not_served(world, recorded, listen_tls):
    listener = listen_tls()
    with pytest.raises(ConnectionError):
        post(connect(listener), "filter", filter_args(world.pod("web"), [world.node("n1")]))
    assert recorded[1] == []


def test_a_client_that_never_shakes_hands_holds_no_one_up(world, pki, listen_tls):
    """The handshake runs in the connection's worker, not on cheroot's one accepting
    thread: a silent connection delays neither a kept-alive connection nor a new one."""
    listener = listen_tls()
    nodes = [world.node("n1")]
    kept = _tls_client(pki, listener, "client")
    assert post(kept, "filter", filter_args(world.pod("a"), nodes))[0] == 200
    with socket.create_connection(listener.address):     # says nothing
        for connection, name in ((kept, "b"), (_tls_client(pki, listener, "client"), "c")):
            connection.timeout = 3                       # well under the handshake's 10 s
            if connection.sock is not None:
                connection.sock.settimeout(3)
            status, result = post(connection, "filter", filter_args(world.pod(name), nodes))
            assert status == 200 and result["NodeNames"] == ["n1"]


def client_hello() -> bytes:
    """The first bytes a TLS client sends (its ClientHello)."""
    import ssl
    outgoing = ssl.MemoryBIO()
    client = ssl.create_default_context().wrap_bio(ssl.MemoryBIO(), outgoing,
                                                   server_hostname="127.0.0.1")
    with pytest.raises(ssl.SSLWantReadError):
        client.do_handshake()
    return outgoing.read()


@pytest.mark.slow   # waits out a deadline, by design
def test_a_handshake_sent_a_byte_at_a_time_is_cut_off_at_the_deadline(world, listen_tls,
                                                                     monkeypatch):
    monkeypatch.setattr(listener_module, "CLIENT_DEADLINE", 1.0)
    listener = listen_tls()
    hello, stop = client_hello(), threading.Event()
    with socket.create_connection(listener.address) as slow:
        slow.settimeout(10)
        began = time.monotonic()
        sender = threading.Thread(target=trickle, args=(slow, hello, 0.05, stop))
        sender.start()
        try:
            try:
                answer = slow.recv(100)
            except ConnectionResetError:
                answer = b""
            cut_after = time.monotonic() - began
        finally:
            stop.set()
            sender.join(5)
    assert answer == b"" and 0.9 < cut_after < 3
    assert len(hello) * 0.05 > 3                         # it would have gone on longer


def test_without_tls_the_caller_is_named_by_its_address(world, recorded, bindings):
    calls, actors = recorded
    listener = ExtenderListener("127.0.0.1:0", calls, 5.0, post_binding=bindings).start()
    try:
        nodes = [world.node("n1")]
        post(connect(listener), "filter", filter_args(world.pod("web"), nodes))
    finally:
        listener.close()
    assert actors == ["kube-scheduler at 127.0.0.1"]


# --- stopping ----------------------------------------------------------------------------------

def _listener_threads():
    return [t for t in threading.enumerate()
            if t.name == "extender-listener" or t.name.startswith("CP Server")]


def test_close_answers_the_calls_in_flight_at_once_and_joins_every_thread(world, calls,
                                                                           bindings, served):
    """The owner's thread closes the listener (its lease is in doubt): a call waiting for
    that thread is answered as unavailable at once, not at its timeout; a listener made
    again on the same calls serves them."""
    assert _listener_threads() == []
    nodes = [world.node("n1")]
    before = world.state()
    listener = ExtenderListener("127.0.0.1:0", calls, 60.0, post_binding=bindings,
                                threads=3).start()
    results = []
    client = threading.Thread(target=lambda: results.append(
        post(connect(listener), "filter", filter_args(world.pod("p"), nodes))))
    client.start()
    try:
        assert calls.wait(5)                 # the filter waits for the owner's thread
    finally:
        listener.close()
    client.join(10)
    assert results[0][0] == 200 and "has stopped" in results[0][1]["Error"]
    assert calls.serve() == 0 and world.state() == before
    assert _listener_threads() == []
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(listener.address, timeout=5)

    served(lambda: calls.serve() or calls.wait(0.05))
    again = ExtenderListener("127.0.0.1:0", calls, 5.0, post_binding=bindings).start()
    try:
        status, result = post(connect(again), "filter", filter_args(world.pod("q"), nodes))
        assert status == 200 and result["NodeNames"] == ["n1"]
    finally:
        again.close()


def test_the_date_header_is_the_seconds_http_date():
    assert http_date(clock=lambda: 0.2) == "Thu, 01 Jan 1970 00:00:00 GMT"
    assert http_date(clock=lambda: 0.9) == "Thu, 01 Jan 1970 00:00:00 GMT"
    assert http_date(clock=lambda: 86_401.0) == "Fri, 02 Jan 1970 00:00:01 GMT"


def test_a_leader_on_the_shared_socket_serves_while_a_former_one_holds_it_frozen(
        owner, calls, bindings):
    """Issue 22: `up` listens once and hands the socket to both owners. A former leader
    that holds it and accepts nothing (frozen: made, never serving) keeps no port from the
    new leader, which accepts on the same socket and answers kube-scheduler."""
    shared = socket.create_server(("127.0.0.1", 0))
    address = "127.0.0.1:%d" % shared.getsockname()[1]
    frozen = ExtenderListener(address, OwnerCalls({}, "kube-scheduler"), 5.0,
                              post_binding=bindings, inherited_fd=shared.fileno())
    leader = ExtenderListener(address, calls, 5.0, post_binding=bindings,
                              inherited_fd=shared.fileno()).start()
    try:
        assert leader.address == shared.getsockname()
        pod, nodes = owner.pod("web-0", requests={"cpu": "1"}), [owner.node("n1")]
        status, result = post(connect(leader), "filter", filter_args(pod, nodes))
        assert status == 200 and result["Error"] == ""
    finally:
        leader.close()
        frozen.close()
    # Closing an owner's listener leaves the shared socket listening for the next leader.
    with socket.create_connection(shared.getsockname(), timeout=5):
        pass
    shared.close()
