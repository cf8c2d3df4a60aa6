"""Prometheus: the owner's and the pools' metrics scraped over HTTP from the probe server,
the probes' answers, and the Grafana dashboard and alert rules checked against a real
scrape of every process (web, owner, pools)."""
import json
import re
from pathlib import Path

import pytest
import urllib3
import yaml
from django.test import Client
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from schedcache import Cache
from simcluster.generate import make_node, make_pod

from dashboard.owner.commands import CommandServer
from dashboard.owner.owner import CacheOwner
from dashboard.poolkeeper.metrics import PoolsMetrics
from dashboard.runtime.probes import Heartbeat, ProbeServer
from tests.decoded_feed import listed, synced_items

MONITORING = Path(__file__).resolve().parents[3] / "docs" / "monitoring"
HTTP = urllib3.PoolManager()


class Clock:
    def __init__(self, now=1_000_000.0):
        self.now = now

    def __call__(self):
        return self.now


def busy_owner() -> CacheOwner:
    """An owner that assumed two pods, bound one 2.5 s later, and forgot the other."""
    clock = Clock()
    owner = CacheOwner(Cache(ttl=30), command_server=CommandServer({}), clock=clock)
    # what runner.run adds from the decoder's views (dashboard/owner/status.watch_silence)
    owner.status_parts.append(lambda: {"watch_silent": {"pods": 80.0, "nodes": 2.5},
                                       "watch_silence": 75.0})
    pods = [make_pod(f"p{i}") for i in range(3)]
    for item in synced_items([make_node("n1")], pods):
        owner.apply(item)
    uids = [p["metadata"]["uid"] for p in pods]
    for uid in uids[:2]:
        owner.commands.handlers["assume"]({"uid": uid, "node": "n1"}, "scheduler")
    owner.flush()
    clock.now += 2.5
    owner.commands.handlers["finish_binding"]({"uid": uids[0]}, "bind")
    owner.commands.handlers["forget"]({"uid": uids[1]}, "bind")
    owner.take_snapshot()
    owner.flush()
    return owner


def scrape(url) -> dict:
    """{sample name: [(labels, value)]} of a /metrics answer."""
    response = HTTP.request("GET", url)
    assert response.status == 200, response.data
    return samples_of(response.data.decode())


def samples_of(text: str) -> dict:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, []).append((sample.labels, sample.value))
    return found


def value(samples, name, **labels):
    matches = [v for found, v in samples[name] if all(found.get(k) == w
                                                         for k, w in labels.items())]
    assert len(matches) == 1, (name, labels, samples.get(name))
    return matches[0]


@pytest.fixture
def probe_server():
    servers = []

    def serve(registry, live=lambda: None, ready=lambda: None):
        server = ProbeServer("127.0.0.1:0", live, ready, registry).start()
        servers.append(server)
        return f"http://{server.url_host}"
    yield serve
    for server in servers:
        server.close()


def owner_registry(owner):
    registry = CollectorRegistry()
    registry.register(owner.metrics)
    return registry


def test_the_owners_scrape_says_what_its_cache_holds(probe_server):
    base = probe_server(owner_registry(busy_owner()))
    found = scrape(f"{base}/metrics")
    # p0 assumed, its binding finished (the watch has not seen it bound); p1 forgotten.
    assert value(found, "schedview_cache_pods", state="Pending") == 2
    assert value(found, "schedview_cache_pods", state="Assumed") == 1
    assert value(found, "schedview_cache_pods", state="Added") == 0
    assert value(found, "schedview_cache_nodes") == 1
    assert value(found, "schedview_transitions_total", kind="pod_forgotten", cause="bind") == 1
    assert value(found, "schedview_transitions_total", kind="pod_assumed",
                 cause="operator") == 2
    # Assumed to binding finished, on the owner's clock: 2.5 s.
    assert value(found, "schedview_bind_duration_seconds_count") == 1
    assert value(found, "schedview_bind_duration_seconds_bucket", le="2.5") == 1
    assert value(found, "schedview_bind_duration_seconds_bucket", le="1.0") == 0
    # Every command's handling time, by op.
    assert value(found, "schedview_owner_command_seconds_count", op="assume") == 2
    assert value(found, "schedview_snapshot_lag_generations") == 0
    assert value(found, "schedview_owner_synced") == 1
    assert value(found, "schedview_feed_events_total", result="applied") >= 4
    assert value(found, "schedview_watch_silence_seconds", kind="pods") == 80.0
    assert value(found, "schedview_watch_silence_seconds", kind="nodes") == 2.5


def test_comparisons_are_counted_by_result():
    owner = busy_owner()
    owner.metrics.record_flush([], owner.status(), [{"clean": True}, {"clean": False},
                                                    {"clean": True}])
    found = samples_of_registry(owner_registry(owner))
    assert value(found, "schedview_comparisons_total", result="clean") == 2
    assert value(found, "schedview_comparisons_total", result="drift") == 1


def samples_of_registry(registry) -> dict:
    from prometheus_client import generate_latest
    return samples_of(generate_latest(registry).decode())


POOL_STATUS = {"web": {"queue_length": 3, "capacity": 1024, "idle_ready": 5, "members": 24,
                       "claims_in_flight": 1,
                       "metrics": {"outcomes": {"success": 7, "expired": 1},
                                   "latency": {"bounds": [0.01, 0.1], "counts": [4, 2, 1],
                                               "total": 7, "sum": 0.5}}}}


def test_the_pools_scrape_is_the_published_status(probe_server):
    registry = CollectorRegistry()
    registry.register(PoolsMetrics(lambda: POOL_STATUS))
    found = scrape(f"{probe_server(registry)}/metrics")
    assert value(found, "schedview_pool_queue_length", pool="web") == 3
    assert value(found, "schedview_pool_claims_total", pool="web", outcome="success") == 7
    assert value(found, "schedview_pool_dispatch_seconds_bucket", pool="web", le="0.01") == 4
    assert value(found, "schedview_pool_dispatch_seconds_bucket", pool="web", le="0.1") == 6
    assert value(found, "schedview_pool_dispatch_seconds_bucket", pool="web", le="+Inf") == 7
    assert value(found, "schedview_pool_dispatch_seconds_sum", pool="web") == 0.5


def test_probes_answer_the_cause_with_503(probe_server):
    clock = Clock(0.0)
    beat = Heartbeat("owner's loop", within=10, clock=clock)
    base = probe_server(CollectorRegistry(), live=beat.cause,
                        ready=lambda: "a standby: waiting for the leader lease")
    live = HTTP.request("GET", f"{base}/healthz")
    assert (live.status, json.loads(live.data)) == (200, {"live": True})
    clock.now = 11.0    # the loop has not turned for 11 s
    live = HTTP.request("GET", f"{base}/healthz")
    assert live.status == 503
    assert json.loads(live.data) == {"live": False,
                                     "error": "the owner's loop has not turned for 11 s"}
    ready = HTTP.request("GET", f"{base}/readyz")
    assert ready.status == 503 and "standby" in json.loads(ready.data)["error"]
    assert HTTP.request("GET", f"{base}/other").status == 404
    assert HTTP.request("POST", f"{base}/healthz").status == 405


def test_the_owners_readiness_follows_the_lease_and_the_sync():
    from dashboard.management.commands.watch import OwnerProbes
    probes = OwnerProbes()
    assert probes.live() is None and "standby" in probes.ready()
    owner = CacheOwner(Cache(ttl=30), command_server=CommandServer({}))
    probes.lead(owner)
    try:
        assert probes.ready() == "leading, still listing the cluster"
        owner.synced.update(pods=True, nodes=True)
        assert probes.ready() is None and probes.live() is None
    finally:
        probes.stand_by()
    assert "standby" in probes.ready()        # a lost lease: back to standing by


# --- the dashboard and alert rules against a real scrape --------------------------------------
def queries() -> list[str]:
    dashboard = json.loads((MONITORING / "grafana-dashboard.json").read_text())
    found = [target["expr"] for panel in dashboard["panels"]
             for target in panel.get("targets", ())]
    rules = yaml.safe_load((MONITORING / "alerts.yaml").read_text())
    found += [rule["expr"] for group in rules["groups"] for rule in group["rules"]]
    return found


@pytest.mark.django_db
def test_every_query_names_a_metric_a_process_exports(probe_server, api_token, redis_url,
                                                      tmp_path):
    from django.utils import timezone

    from dashboard.models import HealthSample
    HealthSample.objects.create(at=timezone.now(), period=10, level="ok")
    owner = scrape(f"{probe_server(owner_registry(busy_owner()))}/metrics")
    registry = CollectorRegistry()
    registry.register(PoolsMetrics(lambda: POOL_STATUS))
    pools = scrape(f"{probe_server(registry)}/metrics")
    web = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {api_token}")
    exported = (set(owner) | set(pools) | set(samples_of(web.content.decode()))
                | set(worker_scrape(tmp_path)))
    found = queries()
    assert len(found) >= 10
    for expr in found:
        names = set(re.findall(r"\bschedview_[a-z0-9_]+", expr))
        assert names, f"{expr!r} names no schedview metric"
        missing = names - exported
        assert not missing, f"{expr!r} names {missing}, which no process exports"


# --- the Celery worker: its children's numbers, summed by the main process ------------------
WORKER_SCRAPE = """
import multiprocessing, os, sys
import django
django.setup()
from prometheus_client import generate_latest
from dashboard.kube import binding_metrics
from dashboard.worker import worker_probes

def bind(outcome):
    binding_metrics.observe(outcome, 0.02)

if __name__ == "__main__":
    # Forked children, as Celery's prefork pool runs the binds.
    for outcome in ("finish", "finish", "forget"):
        child = multiprocessing.get_context("fork").Process(target=bind, args=(outcome,))
        child.start()
        child.join()
        worker_probes.child_exited(child.pid)
    sys.stdout.write(generate_latest(worker_probes.registry()).decode())
"""


def worker_scrape(tmp_path) -> dict:
    """What a worker's /metrics shows after three children each bound a pod."""
    import os
    import subprocess
    import sys
    store = tmp_path / "prometheus"
    store.mkdir()
    script = tmp_path / "worker_scrape.py"
    script.write_text(WORKER_SCRAPE)
    env = dict(os.environ, PROMETHEUS_MULTIPROC_DIR=str(store),
               DJANGO_SETTINGS_MODULE="dashboard.settings",
               PYTHONPATH=str(Path(__file__).resolve().parents[3]))
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return samples_of(done.stdout)


def test_a_workers_children_are_summed_in_multiprocess_mode(tmp_path):
    found = worker_scrape(tmp_path)
    assert value(found, "schedview_binding_post_seconds_count", outcome="finish") == 2
    assert value(found, "schedview_binding_post_seconds_count", outcome="forget") == 1
    assert value(found, "schedview_binding_post_seconds_bucket", outcome="finish",
                 le="0.025") == 2


def test_a_bind_the_watch_confirms_first_is_timed_too():
    """The watch often sees the bound pod before the bind task reports: assumed -> Added."""
    clock = Clock()
    owner = CacheOwner(Cache(ttl=30), command_server=CommandServer({}), clock=clock)
    pod = make_pod("p")
    for item in synced_items([make_node("n1")], [pod]):
        owner.apply(item)
    owner.commands.handlers["assume"]({"uid": pod["metadata"]["uid"], "node": "n1"}, "x")
    owner.flush()
    clock.now += 0.3
    bound = dict(pod, spec=dict(pod["spec"], nodeName="n1"),
                 metadata=dict(pod["metadata"], resourceVersion="2"))
    for item in listed("pods", [bound], "2"):
        owner.apply(item)
    owner.flush()
    found = samples_of_registry(owner_registry(owner))
    assert value(found, "schedview_transitions_total", kind="pod_confirmed", cause="relist") == 1
    assert value(found, "schedview_bind_duration_seconds_count") == 1
    assert value(found, "schedview_bind_duration_seconds_bucket", le="0.25") == 0
    assert value(found, "schedview_bind_duration_seconds_bucket", le="0.5") == 1
