"""Every process's probes and /metrics, as kubelets and Prometheus reach them: two owners
(leader and standby), a Celery worker with prefork children, and the pools process, each
on its own SCHEDVIEW_PROBE_ADDRESS, against a simulated cluster."""
import sys

import orjson
import pytest
from kubernetes import client, config
from prometheus_client.parser import text_string_to_metric_families

from dashboard.clients.owner_client import send
from tests.live.livestack import Stack, child_env, clear_redis, free_port, new_pod, state_of
from tests.waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]


@pytest.fixture
def probed(redis_url, transactional_db, tmp_path):
    clear_redis()
    kubeconfig = tmp_path / "kubeconfig"
    s = Stack(tmp_path, child_env(tmp_path, redis_url, kubeconfig, compare_period=3600))
    s.cluster(kubeconfig, "--nodes", "6", "--pods", "20", "--zones", "2", "--pools", "web=2",
              "--bookmark-interval", "1")
    s.probes = {}
    try:
        yield s
    finally:
        s.stop_all()


def start_probed(s, name, argv, **env):
    address = f"127.0.0.1:{free_port()}"
    s.probes[name] = f"http://{address}"
    s.start(name, argv, SCHEDVIEW_PROBE_ADDRESS=address, **env)


def probe(s, name, path):
    """(status, body) of a probe path, or (None, None) while nothing listens."""
    try:
        response = s.http.request("GET", f"{s.probes[name]}{path}", retries=False, timeout=5)
    except Exception:
        return None, None
    return response.status, response.data


def metric(s, name, sample, **labels):
    """A sample's value in the process's /metrics (None when absent)."""
    status, body = probe(s, name, "/metrics")
    if status != 200:
        return None
    for family in text_string_to_metric_families(body.decode()):
        for found in family.samples:
            if found.name == sample and all(found.labels.get(k) == v for k, v in labels.items()):
                return found.value
    return None


def test_each_process_answers_its_probes_and_metrics(probed, tmp_path):
    s = probed
    watch = [sys.executable, "manage.py", "watch", "--id"]
    start_probed(s, "leader", [*watch, "leader"])
    wait_for(lambda: probe(s, "leader", "/readyz")[0] == 200, 90, "the leader to be ready")
    start_probed(s, "standby", [*watch, "standby"])
    wait_for(lambda: probe(s, "standby", "/healthz")[0] == 200, 60, "the standby to be live")
    status, body = probe(s, "standby", "/readyz")
    assert status == 503 and "standby" in orjson.loads(body)["error"]
    assert metric(s, "leader", "schedview_cache_nodes") == 6
    assert metric(s, "leader", "schedview_owner_synced") == 1
    # bookmarks every second: each watch has spoken lately (issue 22's silence, wired in)
    for kind in ("pods", "nodes"):
        silent = metric(s, "leader", "schedview_watch_silence_seconds", kind=kind)
        assert silent is not None and silent < 10, (kind, silent)

    # A bind through a worker whose prefork children's numbers its main process serves.
    store = tmp_path / "prometheus"
    store.mkdir()
    start_probed(s, "worker", [sys.executable, "-m", "celery", "-A", "dashboard", "worker",
                               "--loglevel", "WARNING", "--concurrency", "2"],
                 PROMETHEUS_MULTIPROC_DIR=str(store))
    api = client.CoreV1Api(config.new_client_from_config(config_file=str(s.env[
        "SCHEDVIEW_KUBECONFIG"])))
    uid = new_pod(api, "probed-bind")
    wait_for(lambda: state_of(uid) == "Pending", 30, "the owner to see the pending pod")
    node = api.list_node().items[0].metadata.name
    send("assume", {"uid": uid, "node": node}, actor="live-test", timeout=10)
    from dashboard.worker.tasks import bind_pod
    bind_pod.delay(uid, "default", "probed-bind", node)
    wait_for(lambda: metric(s, "worker", "schedview_binding_post_seconds_count",
                            outcome="finish") == 1, 60, "the worker's Binding in its metrics")
    wait_for(lambda: (metric(s, "leader", "schedview_bind_duration_seconds_count") or 0) >= 1,
             30, "the owner's bind duration")
    assert probe(s, "worker", "/readyz")[0] == 200

    # The pools process: its pool's pods in its metrics.
    start_probed(s, "pools", [sys.executable, "manage.py", "pools"])
    wait_for(lambda: metric(s, "pools", "schedview_pool_members", pool="web") == 2, 60,
             "the pool's two pods in the pools' metrics")
    assert probe(s, "pools", "/healthz")[0] == 200

    # The leader goes: the standby takes the lease and becomes the ready one.
    s.stop("leader")
    wait_for(lambda: probe(s, "standby", "/readyz")[0] == 200, 60, "the standby to take over")
