"""Scheduling through the extender: filter latency over every node, pods placed per second.

    .venv/bin/python bench/extender_bench.py [--nodes 5000 --pods 150000 --pending 1000]
    .venv/bin/python bench/extender_bench.py --http [--nodes 500 ...]

The simulated cluster runs in its own process with `--pending` unbound pods. Here: the
owner (reflectors, cache, and the extender attached as `manage.py watch` attaches it)
syncs, then each pending pod goes through filter (NodeNames: every node, as with
nodeCacheCapable) and bind, called as the owner serves kube-scheduler's requests. A
bind's Binding is POSTed to the cluster by 4 worker processes (the listener's threads'
work, kept out of this loop) and its outcome handed back to the owner, and a pod counts as
placed when the watch has confirmed it (status Bound). Left out: the HTTP hop (`--http`
has it).
Latency is wall time, and the owner thread's own CPU time: on a shared machine the
difference is time spent waiting for a core or for the GIL (reflector threads).

With `--http` nothing runs in this process but kube-scheduler: the hops it really pays
are in, over real processes started as the live tests start them (simulated cluster,
`manage.py watch`, a Celery worker and beat) on REDIS_URL's Redis and DATABASE_URL's
database (migrated here). kube-scheduler calls the owner's own listener. Filter calls go
one after another over HTTP (the scheduling cycle is serial), each placed pod's bind call
from a pool of `--binders` threads (kube-scheduler binds asynchronously); a bind is
answered once its Binding is made, and a pod counts as placed when the owner's statuses
say Bound (the watch saw it Added on its node).
"""
import argparse
import http.client
import multiprocessing
import os
import sys
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "live"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

import django  # noqa: E402
import orjson  # noqa: E402

django.setup()

from benchkit import core_api, line, percentile, served_cluster, sync  # noqa: E402
from bind_bench import children, cpu_seconds  # noqa: E402
from django.conf import settings  # noqa: E402

from schedcache import Cache  # noqa: E402

from dashboard.kube.binding import FINISH, bind_once  # noqa: E402
from dashboard.owner.commands import CommandServer  # noqa: E402
from dashboard.owner.owner import CacheOwner  # noqa: E402
from dashboard.owner.runner import attach_extender, tune_gc, tune_switching  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http", action="store_true",
                        help="kube-scheduler over HTTP against real processes")
    parser.add_argument("--nodes", type=int)
    parser.add_argument("--pods", type=int)
    parser.add_argument("--pending", type=int)
    parser.add_argument("--binders", type=int, default=4, help="--http: bind threads")
    parser.add_argument("--right-after-sync", action="store_true",
                        help="--http: start at once after the sync, while the owner writes "
                             "its read model (what a failover costs kube-scheduler)")
    args = parser.parse_args()
    # The in-process run's sizes; over HTTP smaller, for a run of minutes on 2 cores.
    for name, local, over_http in (("nodes", 5000, 500), ("pods", 150000, 5000),
                                   ("pending", 1000, 300)):
        if getattr(args, name) is None:
            setattr(args, name, over_http if args.http else local)
    if args.http:
        return run_http(args)
    tune_gc()
    tune_switching()
    total = args.pods + args.pending
    with served_cluster(args.nodes, total, "--pending-fraction",
                        str(args.pending / total)) as (_, kubeconfig):
        settings.SCHEDVIEW_KUBECONFIG = kubeconfig
        run(args, kubeconfig)


def run(args, kubeconfig):
    owner = CacheOwner(Cache(ttl=30), command_server=CommandServer({}))
    # Forked before the sync, so the workers do not copy the cache.
    binder = ProcessPoolExecutor(4, mp_context=multiprocessing.get_context("fork"))
    binder.submit(int).result()
    extender = attach_extender(owner, schedule_bind=lambda *pod: None)
    handlers = owner.scheduler_verbs
    posting = []      # (uid, node, future of the Binding's outcome)

    def settle(all_of_them=False):
        """Hand finished Bindings' outcomes to the owner, as the listener's threads do."""
        for entry in [e for e in posting if all_of_them or e[2].done()]:
            uid, node, future = entry
            outcome, reason = future.result()
            handlers["extender_bind_outcome"]({"uid": uid, "node": node,
                                               "bound": outcome == FINISH, "reason": reason},
                                              "kube-scheduler")
            posting.remove(entry)
    stop, _, _, _ = sync(owner, kubeconfig)
    names = owner.cache.node_names()
    # What kube-scheduler sends: the pending pods as the API server's JSON.
    pending = orjson.loads(core_api(kubeconfig).list_pod_for_all_namespaces(
        field_selector="spec.nodeName=", _preload_content=False).data)["items"]
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
            plan = handlers["extender_bind"]({"PodName": meta["name"],
                                              "PodNamespace": meta["namespace"],
                                              "PodUID": meta["uid"],
                                              "Node": result["NodeNames"][0]}, "kube-scheduler")
            posting.append((meta["uid"], plan.pod[3], binder.submit(bind_once, *plan.pod)))
            placed.append(meta["uid"])
        settle()
        owner.drain_feed()
    settle(all_of_them=True)
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
        percentiles(label, samples)
    print("end to end: filter, bind, Binding POSTed, confirmed by the watch")
    line(f"{len(placed) - len(unbound)} of {len(pending)} pods placed and bound",
         f"{(len(placed) - len(unbound)) / seconds:>10,.0f} /s")


def percentiles(label, samples):
    line(f"p50{label}", f"{percentile(samples, 0.5) * 1e3:>10.1f} ms")
    line(f"p99{label}", f"{percentile(samples, 0.99) * 1e3:>10.1f} ms")


def run_http(args):
    from django.core.management import call_command

    from dashboard.clients.owner_client import send
    from tests.live.livestack import (
        Stack,
        child_env,
        clear_redis,
        owner_status,
        synced_owner,
        wait_for,
    )

    call_command("migrate", verbosity=0)   # the web and the owner's read model need tables
    clear_redis()
    tmp = Path(tempfile.mkdtemp(prefix="extender-bench-"))
    kubeconfig = tmp / "kubeconfig"
    stack = Stack(tmp, child_env(tmp, os.environ["REDIS_URL"], kubeconfig, compare_period=3600))
    total = args.pods + args.pending
    try:
        stack.cluster(kubeconfig, "--nodes", str(args.nodes), "--pods", str(total), "--zones",
                      "5", "--pending-fraction", str(args.pending / total))
        stack.owner("owner")
        stack.celery()
        synced_owner(timeout=300)
        # Measured in the steady state: after a sync the owner writes every pod's row to
        # the read model (150,000 at full size), which shares its process for a while.
        if not args.right_after_sync:
            began = time.perf_counter()
            wait_for(lambda: owner_status()["read_model_backlog"] == 0, 600,
                     "a written read model")
            print(f"read model written {time.perf_counter() - began:.1f} s after the sync")
        url = stack.extender()
        kube = core_api(kubeconfig)
        # What kube-scheduler's informers hold: node names, pending pods as the API's JSON.
        names = [n.metadata.name for n in kube.list_node().items]
        pending = orjson.loads(kube.list_pod_for_all_namespaces(
            field_selector="spec.nodeName=", _preload_content=False).data)["items"]
        print(f"{len(names)} nodes, {len(pending)} pending pods; logs in {tmp}")
        run_scheduler(stack, url, names, pending, args.binders, send)
    finally:
        stack.stop_all()


def run_scheduler(stack, url, names, pending, binders, send):
    """kube-scheduler's side: serial filters, binds from a thread pool, until Bound."""
    where = urlsplit(url)
    connections = threading.local()

    def call(verb, body):
        """One call on this thread's kept-alive connection, as Go's client keeps them
        (http.client: urllib3's pool cost this process, kube-scheduler, twice the CPU)."""
        begun = time.perf_counter()
        if getattr(connections, "http", None) is None:
            connections.http = http.client.HTTPConnection(where.hostname, where.port,
                                                          timeout=30)
        connections.http.request("POST", f"{where.path}/{verb}", body=orjson.dumps(body),
                                 headers={"Content-Type": "application/json"})
        response = connections.http.getresponse()
        raw = response.read()
        answer = orjson.loads(raw)
        assert response.status == 200 and not answer["Error"], (verb, raw)
        return answer, time.perf_counter() - begun

    def bind(pod, node):
        meta = pod["metadata"]
        return call("bind", {"PodName": meta["name"], "PodNamespace": meta["namespace"],
                             "PodUID": meta["uid"], "Node": node})[1]

    def bound():
        return send("extender_statuses", {"limit": 0}, timeout=10)["counts"].get("Bound", 0)

    pids = {name: p.pid for name, p in stack.processes.items()}
    cpu_before = {name: process_cpu(pid) for name, pid in pids.items()}
    own_cpu = time.process_time()
    already = bound()
    filters, binds = [], []
    start = time.perf_counter()
    with ThreadPoolExecutor(binders) as pool:
        for pod in pending:
            result, seconds = call("filter", {"Pod": pod, "Nodes": None, "NodeNames": names})
            filters.append(seconds)
            if result["NodeNames"]:
                binds.append(pool.submit(bind, pod, result["NodeNames"][0]))
        bind_times = [b.result() for b in binds]
    answered = time.perf_counter() - start
    deadline = time.monotonic() + 120
    while (placed := bound() - already) < len(binds) and time.monotonic() < deadline:
        time.sleep(0.05)
    seconds = time.perf_counter() - start
    print(f"over HTTP at {url}: filter (NodeNames: {len(names)} nodes), {len(filters)} pods")
    percentiles("", filters)
    line("mean (the serial loop's pace)", f"{sum(filters) / len(filters) * 1e3:>10.1f} ms")
    print(f"bind calls, {binders} threads")
    percentiles("", bind_times)
    print("end to end: filter, bind, Binding POSTed, Bound in the owner's statuses")
    line(f"{placed} of {len(pending)} pods placed and bound in {seconds:.1f} s",
         f"{placed / seconds:>10,.0f} /s")
    line("of which kube-scheduler's calls (filter, then the last bind answered)",
         f"{answered:>10.1f} s")
    print("CPU seconds over the run: " + ", ".join(
        f"{name} {process_cpu(pid) - cpu_before[name]:.1f}" for name, pid in pids.items())
        + f", kube-scheduler (this process) {time.process_time() - own_cpu:.1f}")


def process_cpu(pid):
    """A process's CPU seconds with its children's (the Celery worker's pool)."""
    return cpu_seconds(pid) + sum(cpu_seconds(c) for c in children(pid))


if __name__ == "__main__":
    main()
