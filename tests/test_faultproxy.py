"""The fault proxy (tests/faultproxy.py) does each mode, switches at run time and leaves
nothing behind: an echo server behind it stands for the database or Redis."""
import socket
import socketserver
import threading

import pytest

from tests.faultproxy import BLACKHOLE, CUT, PASS, FaultProxy
from tests.waiting import wait_for

QUIET = 0.3   # seconds a blackholed connection is watched for bytes that must not come


class Echo(socketserver.BaseRequestHandler):
    def handle(self):
        self.server.connections += 1
        while data := self.request.recv(4096):
            self.request.sendall(data)


@pytest.fixture
def echo():
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Echo)
    server.daemon_threads, server.connections = True, 0
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(5)


@pytest.fixture
def proxy(echo):
    with FaultProxy(echo.server_address) as proxy:
        yield proxy


def dial(proxy) -> socket.socket:
    return socket.create_connection(("127.0.0.1", proxy.port), timeout=5)


def roundtrip(sock, data=b"hello"):
    sock.sendall(data)
    got = b""
    while len(got) < len(data):
        chunk = sock.recv(4096)
        assert chunk, "the proxy closed the connection"
        got += chunk
    return got


def silent(sock) -> bool:
    """Nothing arrives on `sock` within QUIET seconds."""
    sock.settimeout(QUIET)
    try:
        sock.recv(1)   # bytes, or the end of the connection: not silent
        return False
    except TimeoutError:
        return True
    finally:
        sock.settimeout(5)


def test_pass_forwards_both_ways(proxy):
    with dial(proxy) as sock:
        assert roundtrip(sock, b"x" * 200_000) == b"x" * 200_000


def test_blackhole_holds_open_connections_and_releases_them_on_pass(proxy):
    with dial(proxy) as sock:
        assert roundtrip(sock) == b"hello"
        proxy.set_mode(BLACKHOLE)
        sock.sendall(b"held")
        assert silent(sock)
        proxy.set_mode(PASS)
        assert sock.recv(4) == b"held"


def test_blackhole_accepts_new_connections_the_server_never_sees(proxy, echo):
    proxy.set_mode(BLACKHOLE)
    with dial(proxy) as sock:
        wait_for(lambda: proxy.accepted == 1, 5, "the proxy to accept")
        sock.sendall(b"ping")
        assert silent(sock)
        assert echo.connections == 0
        proxy.set_mode(PASS)
        assert sock.recv(4) == b"ping"
        assert echo.connections == 1


def test_cut_closes_connections_refuses_new_ones_and_pass_listens_again(proxy):
    port = proxy.port
    with dial(proxy) as sock:
        roundtrip(sock)
        proxy.set_mode(CUT)
        try:
            assert sock.recv(1) == b""
        except ConnectionResetError:
            pass
    with pytest.raises(ConnectionRefusedError):
        dial(proxy)
    proxy.set_mode(PASS)
    assert proxy.port == port
    with dial(proxy) as sock:
        assert roundtrip(sock) == b"hello"


def test_cut_during_blackhole_ends_the_held_connections(proxy):
    proxy.set_mode(BLACKHOLE)
    with dial(proxy) as sock:
        wait_for(lambda: proxy.accepted == 1, 5, "the proxy to accept")
        proxy.set_mode(CUT)
        try:
            assert sock.recv(1) == b""
        except ConnectionResetError:
            pass


@pytest.mark.parametrize("mode", [PASS, BLACKHOLE, CUT])
def test_stop_ends_every_thread_and_socket(echo, mode):
    before = set(threading.enumerate())
    proxy = FaultProxy(echo.server_address).start()
    held = [dial(proxy) for _ in range(3)]
    for sock in held:
        roundtrip(sock)
    proxy.set_mode(mode)
    proxy.stop()
    assert [t for t in threading.enumerate() if t not in before
            and t.name.startswith("faultproxy")] == []
    assert proxy._sockets == set() and proxy._listener is None
    for sock in held:
        try:
            assert sock.recv(1) == b""
        except ConnectionResetError:
            pass
        sock.close()


def test_an_unknown_mode_is_refused_and_changes_nothing(proxy):
    with pytest.raises(ValueError, match="pass, cut, blackhole"):
        proxy.set_mode("drop")
    assert proxy.mode == PASS
    with dial(proxy) as sock:
        assert roundtrip(sock) == b"hello"


def test_a_thread_listed_but_not_started_yet_is_kept_for_stop(echo, monkeypatch):
    """Two spawns at once: the second prunes the list while the first is not started."""
    proxy, release = FaultProxy(echo.server_address), threading.Event()
    start = threading.Thread.start

    def start_after_another_spawn(thread):
        if thread.name == "first":
            proxy._spawn(release.wait, name="second")
        start(thread)
    monkeypatch.setattr(threading.Thread, "start", start_after_another_spawn)
    proxy._spawn(release.wait, name="first")
    try:
        assert sorted(t.name for t in proxy._threads) == ["first", "second"]
    finally:
        release.set()
        proxy.stop()
