"""The probe endpoints of the processes that are not the web: `/healthz` (liveness),
`/readyz` (readiness) and `/metrics` (Prometheus), on SCHEDVIEW_PROBE_ADDRESS.

    probes = ProbeServer("0.0.0.0:9100", live=lambda: None, ready=lambda: "still listing")
    probes.start()   # serves in a thread of its own; probes.close() stops it

`live` and `ready` answer None when all is well, else the cause, which the probe
answers as 503 JSON `{"live"|"ready": false, "error": cause}`. They run in the
server's threads, so they only read what the process's own loop left (a time, a flag).

Why prometheus_client's WSGI server (wsgiref's, threaded): the official client serves
/metrics with it already, and the probes are two more paths in front of it, not an
HTTP server of our own. No login: kubelets and Prometheus cannot log in, so bind
the address where only they reach (the pod's own IP in a cluster).
"""
import logging
import threading
import time
from collections.abc import Callable
from wsgiref.simple_server import WSGIRequestHandler, make_server

import orjson
from prometheus_client import REGISTRY, CollectorRegistry, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer

log = logging.getLogger(__name__)

Cause = Callable[[], str | None]


class _QuietHandler(WSGIRequestHandler):
    """Probes come every few seconds: no access log line for each."""

    def log_message(self, format, *args):
        pass


def _json(start_response, status: str, body: dict) -> list[bytes]:
    start_response(status, [("Content-Type", "application/json")])
    return [orjson.dumps(body)]


def split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host, int(port)


class ProbeServer:
    def __init__(self, address: str, live: Cause, ready: Cause,
                 registry: CollectorRegistry = REGISTRY):
        self.address = address
        self.live, self.ready = live, ready
        self.metrics = make_wsgi_app(registry)
        self._server = None

    def app(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        if path == "/metrics":
            return self.metrics(environ, start_response)
        if path in ("/healthz", "/readyz"):
            if environ.get("REQUEST_METHOD") not in ("GET", "HEAD"):
                return _json(start_response, "405 Method Not Allowed",
                             {"error": "probes answer GET"})
            word = "live" if path == "/healthz" else "ready"
            try:
                cause = (self.live if word == "live" else self.ready)()
            except Exception as exc:   # a probe that cannot tell says so, not 500
                log.exception("the %s probe failed", word)
                cause = f"the probe failed: {type(exc).__name__}: {exc}"
            if cause:
                return _json(start_response, "503 Service Unavailable",
                             {word: False, "error": cause})
            return _json(start_response, "200 OK", {word: True})
        return _json(start_response, "404 Not Found",
                     {"error": "not found: /healthz, /readyz and /metrics are served here"})

    def start(self) -> "ProbeServer":
        host, port = split_address(self.address)
        self._server = make_server(host, port, self.app, ThreadingWSGIServer,
                                   handler_class=_QuietHandler)
        threading.Thread(target=self._server.serve_forever, name="probes", daemon=True).start()
        log.info("serving /healthz, /readyz and /metrics at http://%s", self.url_host)
        return self

    @property
    def url_host(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{host}:{port}"

    def close(self):
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


class Heartbeat:
    """A loop's last turn, for a liveness probe: the loop calls `turned()` each turn; the
    probe answers a cause once it has not for `within` seconds."""

    def __init__(self, what: str, within: float = 10.0, clock=None):
        self.what, self.within = what, within
        self.clock = clock or time.monotonic
        self.last = self.clock()

    def turned(self):
        self.last = self.clock()

    def cause(self) -> str | None:
        quiet = self.clock() - self.last
        if quiet > self.within:
            return f"the {self.what} has not turned for {quiet:.0f} s"
        return None
