"""/metrics at cluster scale: how long a Prometheus scrape of the cache owner takes.

    .venv/bin/python bench/metrics_bench.py [--nodes 5000 --pods 150000 --scrapes 300]

The owner holds the generated cluster (listed into it as a relist would), a thread
flushes it every 100 ms as `manage.py watch` does (which is when the metrics are
handed over), and its probe server is scraped over HTTP, one GET after another, as
Prometheus does. The figure to keep under 100 ms is the scrape's p99: a scrape reads
what the last flush left, so it must not grow with the pods.
"""
import argparse
import os
import sys
import threading
import time

import urllib3

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

import django  # noqa: E402

django.setup()

from benchkit import line, percentile  # noqa: E402
from prometheus_client import REGISTRY  # noqa: E402

from schedcache import Cache  # noqa: E402
from simcluster.generate import generate_cluster  # noqa: E402

from dashboard.owner.commands import CommandServer  # noqa: E402
from dashboard.owner.decoder import DecodedList, DecodedPage, digest_pod  # noqa: E402
from dashboard.owner.owner import CacheOwner  # noqa: E402
from dashboard.runtime.probes import ProbeServer  # noqa: E402
from dashboard.wire.extender import BIND_INFO_ANNOTATION


def synced_owner(nodes: int, pods: int) -> CacheOwner:
    started = time.perf_counter()
    cluster = generate_cluster(nodes=nodes, pods=pods, zones=5, seed=1)
    owner = CacheOwner(Cache(ttl=30), command_server=CommandServer({}))
    # listed as the decoder process hands a list over: digested records, one page
    records = [digest_pod(p, (BIND_INFO_ANNOTATION,)) for p in cluster.pods]
    for item in (DecodedPage("nodes", cluster.nodes, True), DecodedList("nodes", "1"),
                 DecodedPage("pods", records, True), DecodedList("pods", "1")):
        owner.apply(item)
    owner.take_snapshot()
    owner.flush()
    line(f"owner synced with {owner.cache.node_count()} nodes, {owner.cache.pod_count()} "
         f"cached + {len(owner.pending)} pending pods", f"{time.perf_counter() - started:>8.1f} s")
    return owner


def flushing(owner: CacheOwner, stop: threading.Event):
    while not stop.wait(0.1):
        owner.flush()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=150_000)
    parser.add_argument("--scrapes", type=int, default=300)
    args = parser.parse_args()
    owner = synced_owner(args.nodes, args.pods)
    REGISTRY.register(owner.metrics)
    server = ProbeServer("127.0.0.1:0", lambda: None, lambda: None).start()
    stop = threading.Event()
    thread = threading.Thread(target=flushing, args=(owner, stop), daemon=True)
    thread.start()
    http = urllib3.PoolManager()
    url = f"http://{server.url_host}/metrics"
    try:
        http.request("GET", url)   # a first connection
        times, size = [], 0
        for _ in range(args.scrapes):
            started = time.perf_counter()
            response = http.request("GET", url)
            times.append(time.perf_counter() - started)
            assert response.status == 200
            size = len(response.data)
    finally:
        stop.set()
        thread.join()
        server.close()
    print(f"/metrics of the owner, {args.scrapes} scrapes over HTTP while it flushes "
          f"every 100 ms ({size:,} bytes each)")
    line("p50", f"{percentile(times, 0.5) * 1e3:>8.2f} ms")
    line("p99 (to keep under 100 ms)", f"{percentile(times, 0.99) * 1e3:>8.2f} ms")
    line("max", f"{max(times) * 1e3:>8.2f} ms")


if __name__ == "__main__":
    main()
