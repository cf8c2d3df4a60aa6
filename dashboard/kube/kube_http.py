"""Single requests to the API server over the standard library's http.client, for the hot
paths that send one small body and read one small answer: Bindings and claims.

Where to connect and how (host, TLS, credentials) comes from the kubernetes client's
Configuration (the kubeconfig or the service account). A request goes out in one write
on one keep-alive connection per thread, which costs about half the CPU of the client's
urllib3 path (bench/claim_bench.py) — what bounds binds and claims per second. Proxies
are not supported. A request is resent only when a reused connection turns out closed
before the server answered (the server dropped an idle keep-alive); callers whose
request must not land twice need an answer that says so on the second copy (a Binding
and a claim's resourceVersion-checked patch both get 409). Django-free.
"""
import http.client
import ssl
import threading
import time
from urllib.parse import quote, urlsplit

import orjson
from kubernetes import client

AUTH_REFRESH = 60.0   # seconds between re-reading credentials (tokens may rotate)
_STALE = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError)


class Unreachable(Exception):
    """No answer from the API server: connection refused, reset, timed out."""


class KubeHttp:
    """request(method, path, body, content_type) -> (status, body bytes), thread-safe."""

    def __init__(self, configuration: client.Configuration, timeout: float = 10.0,
                 clock=time.monotonic):
        if configuration.proxy:
            raise ValueError("requests go to the API server directly: a proxy is not "
                             "supported")
        url = urlsplit(configuration.host)
        self.secure = url.scheme == "https"
        self.address = (url.hostname, url.port or (443 if self.secure else 80))
        self.prefix = url.path.rstrip("/")
        self.timeout = timeout
        self.api_client = client.ApiClient(configuration)
        self.tls = _tls_context(configuration) if self.secure else None
        self._local = threading.local()
        self.clock = clock
        self._auth = ({}, float("-inf"))   # (headers, clock time they were made)

    def request(self, method: str, path: str, body: bytes = None,
                content_type: str = "application/json", timeout: float = None,
                query: str = "") -> tuple:
        """Send one request to `path` (below the server's prefix; `query` encoded) and read
        its answer."""
        headers = dict(self._headers())
        if body is not None:
            headers["Content-Type"] = content_type
        target = f"{self.prefix}{path}?{query}" if query else self.prefix + path
        reused = getattr(self._local, "conn", None) is not None
        for fresh in (False, True):
            conn = self._connection(fresh, self.timeout if timeout is None else timeout)
            try:
                conn.request(method, target, body=body, headers=headers)
                response = conn.getresponse()
                return response.status, response.read()
            except _STALE as error:
                conn.close()
                if fresh or not reused:
                    self._local.conn = None
                    raise Unreachable(f"the API server could not be reached: {error}") from None
            except (OSError, http.client.HTTPException) as error:
                conn.close()
                self._local.conn = None
                raise Unreachable(f"the API server could not be reached: {error}") from None
        raise AssertionError("unreachable")

    def _headers(self) -> dict:
        headers, made = self._auth
        now = self.clock()
        if now - made > AUTH_REFRESH:
            headers = {"Accept": "application/json", "User-Agent": self.api_client.user_agent}
            # The Configuration's refresh hook re-reads a rotated service-account token here.
            self.api_client.update_params_for_auth(headers, [], ["BearerToken"], "", "GET",
                                                   None)
            self._auth = headers, now
        return headers

    def _connection(self, fresh: bool, timeout: float):
        conn = getattr(self._local, "conn", None)
        if conn is None or fresh:
            if conn is not None:
                conn.close()
            if self.secure:
                conn = http.client.HTTPSConnection(*self.address, timeout=timeout,
                                                   context=self.tls)
            else:
                conn = http.client.HTTPConnection(*self.address, timeout=timeout)
            self._local.conn = conn
        elif conn.timeout != timeout:
            conn.timeout = timeout
            if conn.sock is not None:
                conn.sock.settimeout(timeout)
        return conn


def pod_path(namespace: str, name: str, sub: str = "") -> str:
    """The path of a pod (or of its subresource `sub`)."""
    path = f"/api/v1/namespaces/{quote(namespace, safe='')}/pods/{quote(name, safe='')}"
    return f"{path}/{sub}" if sub else path


def status_message(body) -> str:
    """The `message` of a Kubernetes Status body, if that is what came back."""
    try:
        return str(orjson.loads(body).get("message", ""))
    except (orjson.JSONDecodeError, AttributeError, TypeError):
        return ""


def _tls_context(configuration: client.Configuration) -> ssl.SSLContext:
    """The TLS settings the kubeconfig gave the kubernetes client, for http.client."""
    context = ssl.create_default_context(cafile=configuration.ssl_ca_cert or None)
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, configuration.key_file)
    return context
