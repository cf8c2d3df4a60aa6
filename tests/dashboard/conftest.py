"""Fixtures for the reflector tests: a small simulated cluster over real HTTP (no churn,
no kubelet, bookmarks every 0.2 s), the official client, running reflectors, and a
scripted API server on a real socket."""

import threading
from http.server import ThreadingHTTPServer

import pytest
from kubernetes import client

from simcluster.generate import generate_cluster

from tests.dashboard.feedhelpers import Running, Script, ScriptHandler, make_sim


@pytest.fixture(scope="session")
def feed_cluster():
    """Generated once; SimCluster serializes it, so tests cannot change it."""
    return generate_cluster(nodes=6, pods=40, zones=2, seed=11, pending_fraction=0.2,
                            namespaces=3)


@pytest.fixture
def sim(feed_cluster):
    """No churn, no kubelet: every change comes from the test; bookmarks every 0.2 s."""
    with make_sim(feed_cluster) as s:
        yield s


@pytest.fixture
def running(sim):
    """Start reflectors on `sim` with `running.start(...)`; each is stopped (and checked
    stopped) at teardown."""
    runs = Running(sim)
    yield runs
    runs.stop_all()


@pytest.fixture
def scripted():
    """(Script, CoreV1Api) for a real HTTP server on a real socket that plays the script."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), ScriptHandler)
    server.daemon_threads = True
    server.script = Script()
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    api_client = client.ApiClient(client.Configuration(host=f"http://{host}:{port}"))
    try:
        yield server.script, client.CoreV1Api(api_client)
    finally:
        server.script.released.set()
        server.shutdown()
        server.server_close()
        api_client.close()
