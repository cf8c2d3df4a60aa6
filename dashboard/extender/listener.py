"""kube-scheduler's extender verbs served by the cache owner itself, as HiveD serves them.

Through the web a call crossed daphne and Django (about 4 ms of CPU) and a Redis
round trip to the owner (3 ms more). Here a thread per kube-scheduler connection
(HTTP/1.1 keep-alive: kube-scheduler reuses its connections) reads the request and
hands the body to the owner's thread through `OwnerCalls`; the owner's thread
alone touches the cache.

    POST {PREFIX}/filter | {PREFIX}/bind | {PREFIX}/preempt

Answered by the rules in `answers.py`. Beyond those: an unknown path is a 404,
another method a 405, a body without Content-Length a 411, one over `max_body` a 413,
malformed HTTP (or a Content-Length that is not a number) a 400; those close the
connection (the body is left unread). Only the leader listens (a standby holds no cache).

kube-scheduler sends no credentials (shared k8s-wire/extender: no Authorization header),
but its extender `tlsConfig` can present a client certificate: with a certificate and
key the listener serves HTTPS, and with a client CA it requires a certificate signed by
it (the TLS handshake happens in the connection's thread, so a slow client holds no one
else up). Every change a call makes is recorded with the caller: the certificate's
subject, or the address it came from.
"""
import logging
import socketserver
import ssl
import threading
from http.server import BaseHTTPRequestHandler

import orjson

from .answers import VERB_OPS, answer
from .owner_calls import OwnerCalls

log = logging.getLogger(__name__)

PREFIX = "/extender/"
# A filter without nodeCacheCapable carries whole Nodes: 5,000 of them are about 25 MB.
MAX_BODY = 32 * 1024 * 1024
IDLE_TIMEOUT = 120.0     # seconds an idle kept-alive connection stays open (Go's is 90 s)
HANDSHAKE_TIMEOUT = 10.0


def tls_context(cert: str, key: str, client_ca: str = "") -> ssl.SSLContext:
    """The listener's TLS: its certificate, and with `client_ca` a required client
    certificate signed by that CA. Raises OSError / ssl.SSLError for unusable files."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert, key)
    if client_ca:
        context.load_verify_locations(client_ca)
        context.verify_mode = ssl.CERT_REQUIRED
    return context


def caller(connection, address) -> str:
    """Who called, for the history: the client certificate's subject, else the address."""
    peer = connection.getpeercert() if isinstance(connection, ssl.SSLSocket) else None
    if peer:
        subject = dict(pair for rdn in peer.get("subject", ()) for pair in rdn)
        name = subject.get("commonName") or subject.get("organizationName")
        if name:
            return f"kube-scheduler ({name})"[:150]
    return f"kube-scheduler at {address[0]}"


def parse_address(address: str) -> tuple[str, int]:
    """host:port -> (host, port); settings.py checked the form."""
    host, _, port = address.rpartition(":")
    return host, int(port)


class _ExtenderRequest(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True   # an answer is one write; never hold it back
    timeout = IDLE_TIMEOUT
    server_version = "schedview-extender"

    def do_POST(self):
        path = self.path.partition("?")[0]
        op = VERB_OPS.get(path[len(PREFIX):]) if path.startswith(PREFIX) else None
        if op is None:
            return self._refuse(404, f"no extender verb at {self.path}; POST {PREFIX}"
                                     f"{{{','.join(VERB_OPS)}}}")
        if self.headers.get("Transfer-Encoding"):
            return self._refuse(411, "send the body with a Content-Length, not chunked")
        length = self.headers.get("Content-Length")
        if length is None:
            return self._refuse(411, "a Content-Length is required")
        if not (length.isascii() and length.isdigit()):
            return self._refuse(400, f"Content-Length {length!r} is not a number of bytes")
        if int(length) > self.server.max_body:
            return self._refuse(413, f"the body is {length} bytes; at most "
                                     f"{self.server.max_body} are accepted")
        raw = self.rfile.read(int(length))
        if len(raw) < int(length):
            self.close_connection = True   # the client went away mid-body
            return
        status, body = answer(op, raw, self._call_owner, self.server.post_binding)
        self._reply(status, body)

    def _call_owner(self, op, body):
        return self.server.calls.call(op, body, self.server.owner_timeout, self.caller)

    def setup(self):
        super().setup()
        self.caller = caller(self.connection, self.client_address)

    def _not_allowed(self):
        self._refuse(405, f"{self.command} is not allowed: POST {PREFIX}"
                          f"{{{','.join(VERB_OPS)}}}", allow="POST")

    do_GET = do_HEAD = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = _not_allowed

    def _refuse(self, status, message, allow=None):
        self.close_connection = True
        self._reply(status, {"Error": message}, allow=allow)

    def send_error(self, code, message=None, explain=None):
        """http.server's own refusals (malformed request line or headers, too long, unknown
        method), as JSON like every other answer."""
        self._refuse(code, message or self.responses.get(code, ("",))[0])

    def _reply(self, status, body, allow=None):
        payload = orjson.dumps(body)
        head = [f"HTTP/1.1 {status} {self.responses.get(status, ('',))[0]}",
                "Content-Type: application/json", f"Content-Length: {len(payload)}"]
        if allow:
            head.append(f"Allow: {allow}")
        if self.close_connection:
            head.append("Connection: close")
        self.wfile.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + payload)

    def log_message(self, format, *args):
        log.debug("%s %s", self.address_string(), format % args)


class ExtenderListener(socketserver.ThreadingMixIn, socketserver.TCPServer):
    """The listener; `start()` serves from a thread, `close()` stops it (http.server's
    HTTPServer would only add a reverse DNS lookup of the address)."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: str, calls: OwnerCalls, timeout: float, *, post_binding,
                 tls: ssl.SSLContext = None, max_body: int = MAX_BODY):
        """post_binding(uid, namespace, name, node) -> (outcome, reason): posts a bind's
        Binding (dashboard.binding.bind_once) in the connection's thread."""
        super().__init__(parse_address(address), _ExtenderRequest)
        self.calls, self.owner_timeout, self.max_body = calls, timeout, max_body
        self.post_binding, self.tls = post_binding, tls
        self._thread = None

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://{host}:{port}{PREFIX.rstrip('/')}"

    def finish_request(self, request, client_address):
        """In the connection's own thread: the TLS handshake first, when serving HTTPS."""
        if self.tls is None:
            return super().finish_request(request, client_address)
        request.settimeout(HANDSHAKE_TIMEOUT)
        try:
            secured = self.tls.wrap_socket(request, server_side=True)   # takes over the fd
        except (ssl.SSLError, OSError) as exc:
            log.warning("extender TLS handshake with %s failed: %s", client_address[0], exc)
            return
        try:
            super().finish_request(secured, client_address)
        finally:
            secured.close()

    def start(self) -> "ExtenderListener":
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.2},
                                        name="extender-listener", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self.shutdown()
        self.server_close()
        self._thread.join(timeout=5)
