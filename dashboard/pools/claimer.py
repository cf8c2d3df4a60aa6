"""The claim's compare-and-swap over real HTTP: a strategic merge patch of the pod that
carries the resourceVersion at which the pod was seen idle.

A 409 is a conflict (someone changed the pod first: retry with another pod), any
other refusal or a transport failure is hard. Where to connect and how (host, TLS,
credentials) comes from the kubernetes client's Configuration (the kubeconfig or
the service account); the request itself goes over the standard library's
http.client, one keep-alive connection per claim thread: it sends a request in one
write, and costs half the CPU of the client's urllib3 path (bench/claim_bench.py),
which is what bounds claims per second. Proxies are not supported. A CAS is never
applied twice: a request is resent only when a reused connection turns out closed
before the server answered, and a resent CAS whose first copy did land gets 409.
Django-free, for the benchmark and the tests.
"""
import http.client
import ssl
import threading
import time
from urllib.parse import quote, urlsplit

import orjson
from kubernetes import client

from warmpool import ClaimConflict, ClaimRefused, claim_patch

STRATEGIC_MERGE = "application/strategic-merge-patch+json"
FIELD_MANAGER = "schedview-pools"
AUTH_REFRESH = 60.0   # seconds between re-reading credentials (tokens may rotate)
_STALE = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError)


class ApiClaimer:
    """Callable as PoolScheduler's claimer: (PoolPod, ClaimOptions, claim id) -> the pod."""

    def __init__(self, configuration: client.Configuration, timeout: float = 10.0,
                 clock=time.monotonic):
        if configuration.proxy:
            raise ValueError("the claimer connects directly: a proxy is not supported")
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

    def _headers(self) -> dict:
        headers, made = self._auth
        now = self.clock()
        if now - made > AUTH_REFRESH:
            headers = {"Content-Type": STRATEGIC_MERGE, "Accept": "application/json",
                       "User-Agent": self.api_client.user_agent}
            self.api_client.update_params_for_auth(headers, [], ["BearerToken"], "", "PATCH",
                                                   None)
            self._auth = headers, now
        return headers

    def _connection(self, fresh: bool):
        conn = getattr(self._local, "conn", None)
        if conn is None or fresh:
            if conn is not None:
                conn.close()
            if self.secure:
                conn = http.client.HTTPSConnection(*self.address, timeout=self.timeout,
                                                   context=self.tls)
            else:
                conn = http.client.HTTPConnection(*self.address, timeout=self.timeout)
            self._local.conn = conn
        return conn

    def __call__(self, pod, options, claim_id) -> dict:
        path = (f"{self.prefix}/api/v1/namespaces/{quote(pod.namespace, safe='')}/pods/"
                f"{quote(pod.name, safe='')}?fieldManager={FIELD_MANAGER}")
        body = orjson.dumps(claim_patch(pod, options, claim_id))
        status, data = self._patch(path, body)
        if status == 409:
            raise ClaimConflict(f"{pod.key}: {_status_message(data)}")
        if status != 200:
            raise ClaimRefused(f"HTTP {status}: {_status_message(data) or 'no reason given'}")
        return orjson.loads(data)

    def _patch(self, path: str, body: bytes) -> tuple:
        reused = getattr(self._local, "conn", None) is not None
        for fresh in (False, True):
            conn = self._connection(fresh)
            try:
                conn.request("PATCH", path, body=body, headers=self._headers())
                response = conn.getresponse()
                return response.status, response.read()
            except _STALE as error:
                conn.close()
                if fresh or not reused:
                    raise ClaimRefused(f"the API server could not be reached: {error}") from None
            except (OSError, http.client.HTTPException) as error:
                conn.close()
                self._local.conn = None
                raise ClaimRefused(f"the API server could not be reached: {error}") from None
        raise AssertionError("unreachable")


def _tls_context(configuration: client.Configuration) -> ssl.SSLContext:
    """The TLS settings the kubeconfig gave the kubernetes client, for http.client."""
    context = ssl.create_default_context(cafile=configuration.ssl_ca_cert or None)
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, configuration.key_file)
    return context


def _status_message(body) -> str:
    """The `message` of a Kubernetes Status body, if that is what came back."""
    try:
        return str(orjson.loads(body).get("message", ""))
    except (orjson.JSONDecodeError, AttributeError, TypeError):
        return ""
