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
from pathlib import Path
import statistics
import sys
import time

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402

from benchkit import line, served_cluster, sync  # noqa: E402
from schedcache import Cache  # noqa: E402
from dashboard import tasks  # noqa: E402
from dashboard.feed.commands import CommandServer  # noqa: E402
from dashboard.feed.owner import CacheOwner  # noqa: E402
from dashboard.feed.runner import attach_extender, tune_gc  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=150000)
    parser.add_argument("--pending", type=int, default=1000)
    args = parser.parse_args()
    tune_gc()
    total = args.pods + args.pending
    with served_cluster(args.nodes, total, "--pending-fraction",
                        str(args.pending / total)) as (_, kubeconfig):
        settings.SCHEDVIEW_KUBECONFIG = kubeconfig
        run(args, kubeconfig)


def run(args, kubeconfig):
    owner = CacheOwner(Cache(ttl=30), command_server=CommandServer({}))
    binder = ThreadPoolExecutor(4)
    extender = attach_extender(owner,
                               schedule_bind=lambda *pod: binder.submit(tasks.bind_once, *pod))
    handlers = owner.commands.handlers
    stop, _, _ = sync(owner, kubeconfig)
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
