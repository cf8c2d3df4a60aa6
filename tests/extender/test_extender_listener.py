"""The owner's own extender listener, driven over real HTTP as kube-scheduler drives it:
kept-alive connections, the extender API's JSON, the web's error rules, bad requests, and
an owner too busy to answer in time."""
import threading

import orjson
import pytest

from dashboard.extender.handlers import verb_handlers
from dashboard.extender.listener import ExtenderListener
from dashboard.extender.owner_calls import OwnerCalls
from extender_builders import Bindings, bind_args, filter_args, preempt_args, result_names
from listener_client import connect, post, raw_exchange


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
    connection = connect(listener)
    status, result = post(connection, "schedule", {})
    assert status == 404 and "no extender verb at /extender/schedule" in result["Error"]
    connection = connect(listener)
    assert post(connection, "filter", {}, prefix="/api/v1/extender/")[0] == 404
    connection = connect(listener)
    connection.request("GET", "/extender/filter")
    response = connection.getresponse()
    assert response.status == 405 and response.getheader("Allow") == "POST"
    assert "GET is not allowed" in orjson.loads(response.read())["Error"]


def test_malformed_http_is_400_and_closes_the_connection(owner, listen):
    answer = raw_exchange(listen(), b"POST /extender/filter HTTP/1.1 what\r\n\r\n")
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 ") and b"Connection: close" in head
    assert orjson.loads(body)["Error"]


@pytest.mark.parametrize("headers,status", [
    (b"Content-Length: 100000\r\n", 413),
    (b"Transfer-Encoding: chunked\r\n", 411),
    (b"", 411),
    (b"Content-Length: -5\r\n", 400),
    ("Content-Length: 1\u00b2\r\n".encode("latin-1"), 400),   # a digit to str, not to int()
    ("Content-Length: \u0663\r\n".encode("utf-8"), 400),     # an Arabic-Indic three
])
def test_bodies_too_large_or_without_length_are_refused_unread(owner, listen, headers, status):
    owner.node("n1")
    before = owner.state()
    answer = raw_exchange(listen(max_body=1000),
                          b"POST /extender/filter HTTP/1.1\r\nHost: x\r\n" + headers + b"\r\n")
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 %d " % status), head
    assert orjson.loads(body)["Error"]
    assert owner.state() == before


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


# --- TLS: kube-scheduler's tlsConfig, with a client certificate ---------------------------------

@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """A CA, the listener's certificate (for 127.0.0.1) and kube-scheduler's client
    certificate, made with the openssl command."""
    import subprocess
    d = tmp_path_factory.mktemp("pki")

    def openssl(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=d)
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=test-ca",
            "-keyout", "ca.key", "-out", "ca.pem")
    (d / "server.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    for name, subject in (("server", "/CN=schedview-extender"), ("client", "/CN=kube-scheduler"),
                          ("stranger", "/CN=stranger")):
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", subject,
                "-keyout", f"{name}.key", "-out", f"{name}.csr")
        ca = ("ca.pem", "ca.key") if name != "stranger" else ("self.pem", "self.key")
        if name == "stranger":   # signed by a CA of its own, not ours
            openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=other-ca", "-keyout", "self.key", "-out", "self.pem")
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", ca[0], "-CAkey", ca[1],
                "-CAcreateserial", "-days", "2", "-out", f"{name}.pem",
                *(["-extfile", "server.ext"] if name == "server" else []))
    return d


def _tls_client(pki, listener, cert=None):
    import http.client
    import ssl
    context = ssl.create_default_context(cafile=str(pki / "ca.pem"))
    if cert:
        context.load_cert_chain(str(pki / f"{cert}.pem"), str(pki / f"{cert}.key"))
    host, port = listener.server_address[:2]
    return http.client.HTTPSConnection(host, port, timeout=10, context=context)


def test_with_a_client_ca_only_a_signed_client_certificate_is_served(world, served, pki,
                                                                   bindings):
    from dashboard.extender.listener import tls_context
    actors = []

    def recording(handler):
        def run(args, actor):
            actors.append(actor)
            return handler(args, actor)
        return run
    calls = OwnerCalls({op: recording(h) for op, h in verb_handlers(world.extender).items()},
                       "kube-scheduler")
    served(lambda: calls.serve() or calls.wait(0.05))
    tls = tls_context(str(pki / "server.pem"), str(pki / "server.key"), str(pki / "ca.pem"))
    listener = ExtenderListener("127.0.0.1:0", calls, 5.0, post_binding=bindings,
                                tls=tls).start()
    try:
        assert listener.url.startswith("https://")
        nodes = [world.node("n1")]
        pod = world.pod("web", requests={"cpu": "1"})
        for cert in (None, "stranger"):
            with pytest.raises(OSError):        # the handshake is refused
                post(_tls_client(pki, listener, cert), "filter", filter_args(pod, nodes))
        assert actors == [] and "uid-web" not in world.statuses
        status, result = post(_tls_client(pki, listener, "client"), "filter",
                              filter_args(pod, nodes))
        assert status == 200 and result["NodeNames"] == ["n1"]
        assert actors == ["kube-scheduler (kube-scheduler)"]
    finally:
        listener.close()


def test_without_tls_the_caller_is_named_by_its_address(world, served, bindings):
    actors = []
    handlers = verb_handlers(world.extender)
    calls = OwnerCalls({"extender_filter": lambda args, actor: actors.append(actor)
                        or handlers["extender_filter"](args, actor)}, "kube-scheduler")
    served(lambda: calls.serve() or calls.wait(0.05))
    listener = ExtenderListener("127.0.0.1:0", calls, 5.0, post_binding=bindings).start()
    try:
        nodes = [world.node("n1")]
        post(connect(listener), "filter", filter_args(world.pod("web"), nodes))
    finally:
        listener.close()
    assert actors == ["kube-scheduler at 127.0.0.1"]
