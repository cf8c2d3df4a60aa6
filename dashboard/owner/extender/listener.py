"""kube-scheduler's extender verbs served by the cache owner itself, as HiveD serves them.

The owner serves them, not the web, so a call crosses no daphne, Django or Redis round
trip: cheroot (CherryPy's HTTP/1.1 server: threaded, in-process) serves `ExtenderApp`, which
hands each call to the owner's thread; kube-scheduler keeps its connections alive and
reuses them for every verb. Only the leader listens (a standby holds no cache).

kube-scheduler sends no credentials (shared k8s-wire/extender: no Authorization header),
but its extender `tlsConfig` can present a client certificate: given an `ExtenderTLS`
the listener serves HTTPS (`listener_tls.py`).

kube-scheduler treats the extender as not ignorable, so a client that holds the workers
stalls scheduling. A client has CLIENT_DEADLINE for its handshake, for each whole request
and for each whole answer, however it trickles; one address holds at most PER_ADDRESS
connections, so another's leave kube-scheduler its workers (deploy/'s NetworkPolicy lets
no one else reach the port at all).
"""
import logging
import os
import select
import socket
import ssl
import threading
import time
from collections import Counter

from cheroot import wsgi
from cheroot.makefile import StreamReader, StreamWriter
from cheroot.server import HTTPConnection

from .listener_app import MAX_BODY, ExtenderApp
from .listener_tls import ExtenderTLS
from .owner_calls import OwnerCalls
from dashboard.wire.extender import PREFIX, parse_address

log = logging.getLogger(__name__)

# Seconds an idle kept-alive connection stays open: longer than Go's 90 s, so kube-scheduler
# closes it first and never posts a call on a connection the listener is closing.
IDLE_TIMEOUT = 120.0
# cheroot answers each request on a worker of a fixed pool; an idle kept-alive connection
# holds none. A filter or preempt holds one for milliseconds, one at a time (kube-scheduler's
# scheduling cycle is serial). A bind holds one while its Binding is posted, up to
# SCHEDVIEW_EXTENDER_BIND_TIMEOUT, and kube-scheduler binds each pod in a goroutine of its
# own, so binds in flight are pods per second times the API server's latency: 64 carry
# 300 binds/s at 200 ms with workers to spare for the filter. Past that a call waits in
# cheroot's queue (the filter behind binds) and kube-scheduler's httpTimeout slows it down.
# Twice that many, since one client address may take at most half (PER_ADDRESS).
THREADS = 128
# Connections one client address may hold open at once. Each can hold a worker (a
# connection is handed to one as soon as it sends a byte), so a client elsewhere, however
# many connections it opens and however slowly it sends, leaves kube-scheduler (one
# address) the 64 workers above. Over it a new connection is closed as it is accepted,
# before any worker sees it.
PER_ADDRESS = THREADS // 2
# Seconds a client has for each of: the TLS handshake, sending a whole request (line,
# headers and body, from when a worker starts reading it) and taking a whole answer.
# kube-scheduler sends a call in one write and reads its answer at once (its httpTimeout,
# 5 s in deploy/, has given up on anything slower); a client that trickles holds its
# worker this long at most, not for as long as it keeps sending a byte now and then.
CLIENT_DEADLINE = 5.0
STOP_POLL = 0.2          # seconds cheroot's connection loop takes to notice a stop
# Seconds a worker waits for the next request on the connection it just answered before
# handing it back to cheroot's selector: kube-scheduler's serial scheduling cycle sends
# its next filter within a millisecond or two, and serving it here saves the hops to the
# selector's thread and back to a worker, which under the owner's GIL cost a tenth of the
# pods placed a second (bench/extender_bench.py --http). A waiting worker holds no lock.
LINGER = 0.05
MAX_HEAD = 64 * 1024     # bytes of request line and headers (kube-scheduler sends 200)
REFUSAL_LOG_PERIOD = 60.0   # seconds between warnings about one address over PER_ADDRESS


class _Deadlines:
    """A connection's deadlines: for reading the request in progress, and for writing its
    answer (from the first byte written)."""

    def __init__(self):
        self.reading = self.writing = None

    def begin_request(self) -> None:
        self.reading, self.writing = time.monotonic() + CLIENT_DEADLINE, None

    def left_to_read(self) -> float:
        return self._left(self.reading)

    def left_to_write(self) -> float:
        if self.writing is None:
            self.writing = time.monotonic() + CLIENT_DEADLINE
        return self._left(self.writing)

    @staticmethod
    def _left(deadline: float) -> float:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("timed out")   # cheroot answers a 408 if it can
        return left


class _DeadlineIO(socket.SocketIO):
    """The socket under a connection's reader or writer: each recv or send waits only as
    long as the deadline of what it belongs to leaves (a socket timeout bounds each call,
    not a request that arrives a byte at a time)."""

    def __init__(self, sock, mode: str, deadlines: _Deadlines):
        super().__init__(sock, mode)
        self._deadlines = deadlines

    def readinto(self, buffer):
        self._sock.settimeout(self._deadlines.left_to_read())
        return super().readinto(buffer)

    def write(self, data):
        self._sock.settimeout(self._deadlines.left_to_write())
        return super().write(data)


class _Reader(StreamReader):
    def __init__(self, sock, deadlines: _Deadlines, bufsize: int):
        super(StreamReader, self).__init__(_DeadlineIO(sock, "rb", deadlines), bufsize)
        self.bytes_read = 0


class _Writer(StreamWriter):
    def __init__(self, sock, deadlines: _Deadlines, bufsize: int):
        super(StreamWriter, self).__init__(_DeadlineIO(sock, "wb", deadlines), bufsize)
        self.bytes_written = 0


class _Connection(HTTPConnection):
    """Its TLS handshake in this worker within CLIENT_DEADLINE (CPython's socket timeout
    bounds a whole handshake), each request and answer within theirs; after an answer,
    the next request served here if it comes within LINGER."""

    ready = False
    admitted = False     # counted in its address's open connections (_PerAddress)

    def __init__(self, server, sock, makefile=None):
        self.deadlines = _Deadlines()

        def deadline_files(sock, mode, bufsize):   # for cheroot's and its TLS adapter's
            stream = _Reader if "r" in mode else _Writer
            return stream(sock, self.deadlines, bufsize)
        super().__init__(server, sock, deadline_files)

    def communicate(self):
        if not self.ready:
            if isinstance(self.socket, ssl.SSLSocket):
                self.socket.settimeout(CLIENT_DEADLINE)
                self.ssl_env = self.server.ssl_adapter.shake_hands(self.socket,
                                                                   self.remote_addr)
                if self.ssl_env is None:
                    return False   # the worker closes the connection
            self.ready = True
        keep_open = self._one_request()
        while keep_open and self.server.ready and self._next_request_soon():
            keep_open = self._one_request()
        return keep_open

    def _one_request(self) -> bool:
        self.deadlines.begin_request()
        return super().communicate()

    def _next_request_soon(self) -> bool:
        if self.rfile.has_data():
            return True
        if isinstance(self.socket, ssl.SSLSocket) and self.socket.pending():
            return True
        readable, _, _ = select.select([self.socket], [], [], LINGER)
        return bool(readable)

    def close(self):
        super().close()
        if self.admitted:
            self.admitted = False
            self.server.per_address.release(self.remote_addr)


class _PerAddress:
    """The connections each client address holds open, at most `limit`."""

    def __init__(self, limit: int):
        self.limit = limit
        self._open = Counter()
        self._warned = {}          # address -> when its refusals were last logged
        self._lock = threading.Lock()

    def admit(self, address: str) -> bool:
        with self._lock:
            if self._open[address] < self.limit:
                self._open[address] += 1
                return True
            now = time.monotonic()
            warn = now - self._warned.get(address, -REFUSAL_LOG_PERIOD) >= REFUSAL_LOG_PERIOD
            if warn:
                self._warned[address] = now
        if warn:
            log.warning("extender: %s holds %d connections, the most one address may: its "
                        "new ones are closed at once", address, self.limit)
        return False

    def release(self, address: str) -> None:
        with self._lock:
            self._open[address] -= 1
            if not self._open[address]:
                del self._open[address]
                self._warned.pop(address, None)


class _Gateway(wsgi.Gateway_10):
    """WSGI, where an answer that says "Connection: close" closes the connection: cheroot
    would keep it and read on, but a refused request may leave its body unread."""

    def start_response(self, status, headers, exc_info=None):
        if ("Connection", "close") in headers:
            self.req.close_connection = True
        return super().start_response(status, headers, exc_info)


class _Server(wsgi.Server):
    ConnectionClass = _Connection
    keep_alive_conn_limit = None   # an idle connection costs a descriptor (PER_ADDRESS caps)
    expiration_interval = STOP_POLL
    max_request_header_size = MAX_HEAD   # over it: cheroot's 414 or 413, and the end

    def __init__(self, *args, per_address: int, inherited_fd: int | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.gateway = _Gateway
        self.per_address = _PerAddress(per_address)
        self.inherited_fd = inherited_fd

    def bind(self, family, type, proto=0):
        """cheroot makes its socket here; on a socket handed down instead (`up` makes one and
        gives it to both owners), this leader accepts on that one. A former leader frozen
        with it (SIGSTOP) then holds no port: it just accepts nothing, and the new leader's
        accepts take the connections (issue 22: a frozen leader kept the extender away)."""
        if self.inherited_fd is None:
            return super().bind(family, type, proto)
        sock = self.socket = socket.socket(fileno=os.dup(self.inherited_fd))
        self.bind_addr = sock.getsockname()[:2]
        return sock

    def process_conn(self, conn):
        """cheroot's selector thread hands a connection on to the workers: a new one only
        if its address is under its cap (else it is closed here, and no worker sees it)."""
        if not conn.admitted:
            if not self.per_address.admit(conn.remote_addr):
                conn.close()
                return
            conn.admitted = True
        super().process_conn(conn)

    def error_log(self, msg="", level=logging.INFO, traceback=False):
        """cheroot's own reports (a dropped connection, a failing request) to our log."""
        log.log(level, "%s", msg, exc_info=traceback)


class ExtenderListener:
    """The listener, bound when made (OSError when the address is taken); `start()` serves
    from a thread and opens `calls`. `close()` closes them first, so the requests in
    flight are answered at once (the owner's thread, which usually closes the listener,
    would never serve them), then stops serving and joins every thread it started."""

    def __init__(self, address: str, calls: OwnerCalls, timeout: float, *, post_binding,
                 tls: ExtenderTLS = None, max_body: int = MAX_BODY, threads: int = THREADS,
                 per_address: int = PER_ADDRESS, inherited_fd: int | None = None):
        """post_binding(uid, namespace, name, node) -> (outcome, reason): posts a bind's
        Binding (dashboard.kube.binding.bind_once) in the request's thread. `inherited_fd`:
        a listening socket of `address` to accept on rather than binding one."""
        app = ExtenderApp(calls, timeout, post_binding, max_body)
        self._server = _Server(parse_address(address), app, numthreads=threads,
                               server_name="schedview-extender", timeout=IDLE_TIMEOUT,
                               request_queue_size=socket.SOMAXCONN, per_address=per_address,
                               inherited_fd=inherited_fd)
        self._server.ssl_adapter = tls
        self._server.prepare()   # binds and starts the workers
        self._calls = calls
        self._thread = None

    @property
    def address(self) -> tuple[str, int]:
        return self._server.bind_addr

    @property
    def url(self) -> str:
        host, port = self.address
        scheme = "https" if self._server.ssl_adapter is not None else "http"
        return f"{scheme}://{host}:{port}{PREFIX.rstrip('/')}"

    def start(self) -> "ExtenderListener":
        self._calls.open()
        self._thread = threading.Thread(target=self._server.serve, name="extender-listener",
                                        daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self._calls.close()
        self._server.stop()
        if self._thread is not None:
            self._thread.join()
