"""Scheduling through the extender: filter latency over every node, pods placed per second.

    .venv/bin/python bench/extender_bench.py [--nodes 5000 --pods 150000 --pending 1000]

The simulated cluster runs in its own process with `--pending` unbound pods. Here: the
owner (reflectors, cache, and the extender attached as `manage.py watch` attaches it)
syncs, then each pending pod goes through filter (NodeNames: every node, as with
nodeCacheCapable) and bind, called as the owner serves kube-scheduler's requests. Binds
POST the Binding to the cluster from a pool of 4 threads (the work the Celery worker
does), and a pod counts as placed when the watch has confirmed it (status Bound).
Left out: the web's HTTP hop and the Redis command hop (about a millisecond each).
"""
import argparse
from concurrent.futures import ThreadPoolExecutor
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from kubernetes import client, config  # noqa: E402

from schedcache import Cache  # noqa: E402
from dashboard import tasks  # noqa: E402
from dashboard.feed.commands import CommandServer  # noqa: E402
from dashboard.feed.owner import CacheOwner  # noqa: E402
from dashboard.feed.reflector import Reflector  # noqa: E402
from dashboard.feed.runner import attach_extender, settle_heap, tune_gc  # noqa: E402


def line(label, value):
    print(f"  {label:<60} {value}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=150000)
    parser.add_argument("--pending", type=int, default=1000)
    args = parser.parse_args()
    tune_gc()
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = Path(tmp) / "kubeconfig"
        cluster = subprocess.Popen(
            [sys.executable, "-m", "simcluster", "serve", "--nodes", str(args.nodes),
             "--pods", str(args.pods + args.pending), "--zones", "5",
             "--pending-fraction", str(args.pending / (args.pods + args.pending)),
             "--kubeconfig", str(kubeconfig)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
        cluster.stdout.readline()
        settings.SCHEDVIEW_KUBECONFIG = kubeconfig
        try:
            run(args, kubeconfig)
        finally:
            cluster.terminate()
            cluster.wait()


def run(args, kubeconfig):
    owner = CacheOwner(Cache(ttl=30), command_server=CommandServer({}))
    binder = ThreadPoolExecutor(4)
    extender = attach_extender(owner,
                               schedule_bind=lambda *pod: binder.submit(tasks.bind_once, *pod))
    handlers = owner.commands.handlers
    stop = threading.Event()
    for kind in ("nodes", "pods"):
        api = client.CoreV1Api(config.new_client_from_config(config_file=str(kubeconfig)))
        Reflector(api, kind, owner.feed.put, stop=stop).start()
    while not (all(owner.synced.values()) and owner.feed.empty()):
        if not owner.drain_feed(limit=20000):
            time.sleep(0.001)
    settle_heap()
    names = owner.cache.node_names()
    pending = list(owner.pending.values())
    print(f"{len(names)} nodes, {owner.cache.pod_count()} bound pods, {len(pending)} pending")
    latencies, placed = [], []
    start = time.perf_counter()
    for pod in pending:
        begun = time.perf_counter()
        result = handlers["extender_filter"]({"Pod": pod, "Nodes": None, "NodeNames": names},
                                             "kube-scheduler")
        latencies.append(time.perf_counter() - begun)
        if result["NodeNames"]:
            meta = pod["metadata"]
            handlers["extender_bind"]({"PodName": meta["name"], "PodNamespace": meta["namespace"],
                                       "PodUID": meta["uid"], "Node": result["NodeNames"][0]},
                                      "kube-scheduler")
            placed.append(meta["uid"])
        owner.drain_feed()
    deadline = time.monotonic() + 300
    unbound = set(placed)
    while unbound and time.monotonic() < deadline:
        if not owner.drain_feed():
            time.sleep(0.001)
        unbound = {u for u in unbound if extender.status(u)["state"] != "Bound"}
    seconds = time.perf_counter() - start
    stop.set()
    latencies.sort()
    print(f"filter over {len(names)} nodes (NodeNames), {len(latencies)} pods")
    line("p50", f"{statistics.median(latencies) * 1e3:>10.1f} ms")
    line("p99", f"{latencies[int(len(latencies) * 0.99) - 1] * 1e3:>10.1f} ms")
    print("end to end: filter, bind, Binding POSTed, confirmed by the watch")
    line(f"{len(placed) - len(unbound)} of {len(pending)} pods placed and bound",
         f"{(len(placed) - len(unbound)) / seconds:>10,.0f} /s")


if __name__ == "__main__":
    main()
