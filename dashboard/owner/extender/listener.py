"""kube-scheduler's extender verbs served by the cache owner itself, as HiveD serves them.

The owner serves them, not the web, so a call crosses no daphne, Django or Redis round
trip: cheroot (CherryPy's HTTP/1.1 server: threaded, in-process) serves `ExtenderApp`, which
hands each call to the owner's thread; kube-scheduler keeps its connections alive and
reuses them for every verb. Only the leader listens (a standby holds no cache).

kube-scheduler sends no credentials (shared k8s-wire/extender: no Authorization header),
but its extender `tlsConfig` can present a client certificate: given an `ExtenderTLS`
the listener serves HTTPS (`listener_tls.py`).
"""
import logging
import select
import socket
import ssl
import threading

from cheroot import wsgi
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
THREADS = 64
# Seconds a worker waits on a client that is sending a request or shaking hands. cheroot
# hands a new connection to a worker at once, so one that says nothing holds a worker
# this long (between requests a connection waits in cheroot's selector, holding none).
READ_TIMEOUT = 10.0
STOP_POLL = 0.2          # seconds cheroot's connection loop takes to notice a stop
# Seconds a worker waits for the next request on the connection it just answered before
# handing it back to cheroot's selector: kube-scheduler's serial scheduling cycle sends
# its next filter within a millisecond or two, and serving it here saves the hops to the
# selector's thread and back to a worker, which under the owner's GIL cost a tenth of the
# pods placed a second (bench/extender_bench.py --http). A waiting worker holds no lock.
LINGER = 0.05
MAX_HEAD = 64 * 1024     # bytes of request line and headers (kube-scheduler sends 200)


class _Connection(HTTPConnection):
    """Before its first request: READ_TIMEOUT, and the TLS handshake in this worker; after
    each: the next one served here if it comes within LINGER."""

    ready = False

    def communicate(self):
        if not self.ready:
            self.socket.settimeout(READ_TIMEOUT)
            if isinstance(self.socket, ssl.SSLSocket):
                self.ssl_env = self.server.ssl_adapter.shake_hands(self.socket,
                                                                   self.remote_addr)
                if self.ssl_env is None:
                    return False   # the worker closes the connection
            self.ready = True
        keep_open = super().communicate()
        while keep_open and self.server.ready and self._next_request_soon():
            keep_open = super().communicate()
        return keep_open

    def _next_request_soon(self) -> bool:
        if self.rfile.has_data():
            return True
        if isinstance(self.socket, ssl.SSLSocket) and self.socket.pending():
            return True
        readable, _, _ = select.select([self.socket], [], [], LINGER)
        return bool(readable)


class _Gateway(wsgi.Gateway_10):
    """WSGI, where an answer that says "Connection: close" closes the connection: cheroot
    would keep it and read on, but a refused request may leave its body unread."""

    def start_response(self, status, headers, exc_info=None):
        if ("Connection", "close") in headers:
            self.req.close_connection = True
        return super().start_response(status, headers, exc_info)


class _Server(wsgi.Server):
    ConnectionClass = _Connection
    keep_alive_conn_limit = None   # an idle connection costs a descriptor, not a thread
    expiration_interval = STOP_POLL
    max_request_header_size = MAX_HEAD   # over it: cheroot's 414 or 413, and the end

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.gateway = _Gateway

    def error_log(self, msg="", level=logging.INFO, traceback=False):
        """cheroot's own reports (a dropped connection, a failing request) to our log."""
        log.log(level, "%s", msg, exc_info=traceback)


class ExtenderListener:
    """The listener, bound when made (OSError when the address is taken); `start()` serves
    from a thread and opens `calls`. `close()` closes them first, so the requests in
    flight are answered at once (the owner's thread, which usually closes the listener,
    would never serve them), then stops serving and joins every thread it started."""

    def __init__(self, address: str, calls: OwnerCalls, timeout: float, *, post_binding,
                 tls: ExtenderTLS = None, max_body: int = MAX_BODY, threads: int = THREADS):
        """post_binding(uid, namespace, name, node) -> (outcome, reason): posts a bind's
        Binding (dashboard.kube.binding.bind_once) in the request's thread."""
        app = ExtenderApp(calls, timeout, post_binding, max_body)
        self._server = _Server(parse_address(address), app, numthreads=threads,
                               server_name="schedview-extender", timeout=IDLE_TIMEOUT,
                               request_queue_size=socket.SOMAXCONN)
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
