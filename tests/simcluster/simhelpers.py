"""Helpers shared by the simcluster tests: raw HTTP, capture files, pod bodies."""

import http.client
import pathlib
from urllib.parse import urlsplit

import orjson

WIRE = pathlib.Path(__file__).parent / "wire"


class Raw:
    """Plain http.client requests, for byte-level checks."""

    def __init__(self, url: str):
        parts = urlsplit(url)
        self.host, self.port = parts.hostname, parts.port

    def request(self, method: str, path: str, body=None, headers=None, timeout=10):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        data = body if isinstance(body, (bytes, type(None))) else orjson.dumps(body)
        conn.request(method, path, body=data, headers={
            "Accept": "application/json", "User-Agent": "OpenAPI-Generator/37.0.1/python",
            **(headers or {})})
        return conn, conn.getresponse()

    def call(self, method: str, path: str, body=None, headers=None):
        conn, resp = self.request(method, path, body, headers)
        data = resp.read()
        conn.close()
        return resp, data


def capture(name: str) -> bytes:
    return (WIRE / name).read_bytes()


def capture_request_body(name: str) -> dict:
    return orjson.loads(capture(name + ".request.txt").split(b"\n\n", 1)[1])


def pending_pod_body(name: str, **labels) -> dict:
    return {"metadata": {"name": name, "labels": labels or {"app": name}},
            "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"requests": {"cpu": "100m"}}}]}}
