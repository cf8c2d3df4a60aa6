"""SCHEDVIEW_IN_CLUSTER: the service account's token, CA and the API server's address, and
a token the kubelet rotates is what the next requests carry (the kubernetes client's
refresh hook, at most a minute after its last read), for every way the processes call."""
import datetime
import http.server
import os
import ssl
import subprocess
import threading
from types import SimpleNamespace

import pytest
from django.test import override_settings
from kubernetes.config import incluster_config

from dashboard.kube import client as kube
from dashboard.kube.kube_http import AUTH_REFRESH, KubeHttp

NODE_LIST = b'{"kind":"NodeList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[]}'


class Recorder(http.server.BaseHTTPRequestHandler):
    """The API server's side: records each request's Authorization, answers an empty list."""
    seen: list

    def do_GET(self):
        self.seen.append(self.headers["Authorization"])
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(NODE_LIST)))
        self.end_headers()
        self.wfile.write(NODE_LIST)

    def log_message(self, *args):
        pass


@pytest.fixture
def api_server(tmp_path):
    """An HTTPS server on 127.0.0.1 with a certificate made for the test; its CA file."""
    cert, key = tmp_path / "ca.crt", tmp_path / "server.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    handler = type("Handler", (Recorder,), {"seen": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    server.socket = tls.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield SimpleNamespace(port=server.server_address[1], ca=cert, seen=handler.seen)
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def clock(monkeypatch):
    """The kubernetes client's in-cluster loader's clock (it decides when to re-read)."""
    now = {"at": datetime.datetime(2026, 11, 24, 12, 0)}
    fake = SimpleNamespace(datetime=SimpleNamespace(now=lambda: now["at"]),
                           timedelta=datetime.timedelta)
    monkeypatch.setattr(incluster_config, "datetime", fake)
    return now


@pytest.fixture
def pod_mount(tmp_path, api_server, monkeypatch):
    """The service account as the kubelet mounts it, and the Service environment."""
    token = tmp_path / "token"
    token.write_text("token-one")
    monkeypatch.setattr(kube, "TOKEN_FILE", str(token))
    monkeypatch.setattr(kube, "CA_FILE", str(api_server.ca))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", str(api_server.port))
    return token


def rotate(token, value):
    """As the kubelet does: the new file replaces the old one atomically."""
    fresh = token.with_name("token.new")
    fresh.write_text(value)
    os.replace(fresh, token)


@override_settings(SCHEDVIEW_IN_CLUSTER=True)
def test_requests_carry_the_rotated_token_within_a_minute(api_server, pod_mount, clock):
    api = kube.core_api()
    assert api.api_client.configuration.host == f"https://127.0.0.1:{api_server.port}"
    kube.read_json(api.list_node(_preload_content=False))
    rotate(pod_mount, "token-two")
    clock["at"] += datetime.timedelta(seconds=30)       # read 30 s ago: still the old one
    kube.read_json(api.list_node(_preload_content=False))
    clock["at"] += datetime.timedelta(seconds=31)
    assert kube.read_json(api.list_node(_preload_content=False))["metadata"] == {
        "resourceVersion": "7"}
    assert api_server.seen == ["bearer token-one", "bearer token-one", "bearer token-two"]


@override_settings(SCHEDVIEW_IN_CLUSTER=True)
def test_the_binder_and_claimer_connection_sends_the_rotated_token(api_server, pod_mount, clock):
    """kube_http, which posts Bindings and claims: over TLS to the service's address, with
    the token re-read once AUTH_REFRESH has passed."""
    monotonic = {"at": 0.0}
    http = KubeHttp(kube.api_client().configuration, clock=lambda: monotonic["at"])
    assert http.request("GET", "/api/v1/nodes") == (200, NODE_LIST)
    rotate(pod_mount, "token-two")
    clock["at"] += datetime.timedelta(seconds=61)
    http.request("GET", "/api/v1/nodes")                  # its credentials are still fresh
    monotonic["at"] += AUTH_REFRESH + 1
    http.request("GET", "/api/v1/nodes")
    assert api_server.seen == ["bearer token-one", "bearer token-one", "bearer token-two"]


@override_settings(SCHEDVIEW_IN_CLUSTER=True)
def test_no_token_file_is_a_clear_error(api_server, pod_mount):
    pod_mount.unlink()
    with pytest.raises(incluster_config.ConfigException, match="token file does not exist"):
        kube.core_api()
