"""Scheduling through the extender: filter latency over every node, pods placed per second.

    .venv/bin/python bench/extender_bench.py [--nodes 5000 --pods 150000 --pending 1000]

The simulated cluster runs in its own process with `--pending` unbound pods. Here: the
owner (reflectors, cache, and the extender attached as `manage.py watch` attaches it)
syncs, then each pending pod goes through filter (NodeNames: every node, as with
nodeCacheCapable) and bind, called as the owner serves kube-scheduler's requests. Binds
leave through the owner's BindSender in batches and are POSTed to the cluster by 4
worker processes (the Celery worker's work, out of the owner's process as in production),
and a pod counts as placed when the watch has confirmed it (status Bound). Left out: the web's HTTP hop and the Redis command hop.
Latency is wall time, and the owner thread's own CPU time: on a shared machine the
difference is time spent waiting for a core or for the GIL (reflector threads).
"""
import argparse
from concurrent.futures import ProcessPoolExecutor
import multiprocessing
import os
from pathlib import Path
import statistics
import sys
import time

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

import django  # noqa: E402
import orjson  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402

from benchkit import line, served_cluster, sync  # noqa: E402
from schedcache import Cache  # noqa: E402
from dashboard import tasks  # noqa: E402
from dashboard.extender.bindsender import BindSender  # noqa: E402
from dashboard.feed.commands import CommandServer  # noqa: E402
from dashboard.feed.owner import CacheOwner  # noqa: E402
from dashboard.feed.runner import attach_extender, tune_gc, tune_switching  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=150000)
    parser.add_argument("--pending", type=int, default=1000)
    args = parser.parse_args()
    tune_gc()
    tune_switching()
    total = args.pods + args.pending
    with served_cluster(args.nodes, total, "--pending-fraction",
                        str(args.pending / total)) as (_, kubeconfig):
        settings.SCHEDVIEW_KUBECONFIG = kubeconfig
        run(args, kubeconfig)


def bind_batch(batch):
    """The Celery worker's part (tasks.bind_pods without the replies), in a worker process."""
    for pod in batch:
        tasks.bind_once(*pod)


def run(args, kubeconfig):
    owner = CacheOwner(Cache(ttl=30), command_server=CommandServer({}))
    # Forked before the sync, so the workers do not copy the cache.
    binder = ProcessPoolExecutor(4, mp_context=multiprocessing.get_context("fork"))
    binder.submit(int).result()
    # As in the owner process: binds leave the owner's thread through a BindSender.
    extender = attach_extender(owner, schedule_bind=BindSender(
        lambda batch: binder.submit(bind_batch, batch)))
    handlers = owner.commands.handlers
    stop, _, _ = sync(owner, kubeconfig)
    names = owner.cache.node_names()
    pending = list(owner.pending.values())
    print(f"{len(names)} nodes, {owner.cache.pod_count()} bound pods, {len(pending)} pending")
    latencies, cpu_times, placed = [], [], []
    start = time.perf_counter()
    names_json = orjson.dumps(names)
    for pod in pending:
        # The owner decodes each command from JSON (its part of the Redis hop): every call
        # gets fresh name strings. Encoding is the web's part: only spliced here.
        args = orjson.loads(b'{"Pod":%b,"Nodes":null,"NodeNames":%b}'
                            % (orjson.dumps(pod), names_json))
        begun, cpu_begun = time.perf_counter(), time.thread_time()
        result = handlers["extender_filter"](args, "kube-scheduler")
        latencies.append(time.perf_counter() - begun)
        cpu_times.append(time.thread_time() - cpu_begun)
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
    print(f"filter over {len(names)} nodes (NodeNames), {len(latencies)} pods")
    for label, samples in (("", latencies), (", the owner thread's CPU time", cpu_times)):
        samples.sort()
        line(f"p50{label}", f"{statistics.median(samples) * 1e3:>10.1f} ms")
        line(f"p99{label}", f"{samples[int(len(samples) * 0.99) - 1] * 1e3:>10.1f} ms")
    print("end to end: filter, bind, Binding POSTed, confirmed by the watch")
    line(f"{len(placed) - len(unbound)} of {len(pending)} pods placed and bound",
         f"{(len(placed) - len(unbound)) / seconds:>10,.0f} /s")


if __name__ == "__main__":
    main()
