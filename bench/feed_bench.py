"""The live feed's figures: sync time, watch events applied per second, change-to-publish delay.

    .venv/bin/python bench/feed_bench.py [--nodes 5000 --pods 150000] [--comparisons 1]

The simulated cluster runs in its own process (`python -m simcluster serve`), the
owner here and the reflectors in a decoder process, as in `manage.py watch` (the
decoder reads HTTP, parses and digests pods; the owner thread applies them). The
database writer and the channel layer are left out: they run beside the owner and do not hold it up (the writer is a thread with a
bounded queue; publishing is one message per 100 ms), so the figures are the cache's.

1. fresh start to a synced cache: list nodes and pods (paged, raw JSON), apply all;
   then `--comparisons` (one by default) as the comparer runs them (the decoder lists, the
   owner compares), each with both processes' RSS after it;
2. watch events applied per second over HTTP: a watch from resourceVersion 0 makes
   the server send a synthetic ADDED for every pod, applied to an empty cache (the
   clock starts at the first event applied, after the decoder process has started);
3. change-to-publish delay: pods created through the API while the cluster churns;
   each carries its send time in a label, read back when the owner's flush hands the
   event to the publisher (p50 and p99).
Binds per second through Celery: bench/bind_bench.py.
"""
import argparse
import functools
import gc
import os
import resource
import sys
import threading
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

import django  # noqa: E402

django.setup()

from benchkit import cluster_pods, core_api as api, line, percentile, served_cluster, sync  # noqa: E402
from bind_bench import cpu_seconds  # noqa: E402

from schedcache import Cache  # noqa: E402

from dashboard.owner.comparing import CompareFailed, Compared, CompareRequest  # noqa: E402
from dashboard.owner.decoder import DecoderProcess  # noqa: E402
from dashboard.owner.owner import CacheOwner  # noqa: E402
from dashboard.owner.runner import list_for_comparison, tune_gc  # noqa: E402

MIB = 2**20


class Recorder:
    """Stands in for the channel layer: notes when each event was handed over."""

    def __init__(self):
        self.seen = []

    def publish(self, events, status, term=None):
        now = time.time()
        self.seen.extend((now, e) for e in events)


def bench_sync(kubeconfig):
    owner = CacheOwner(Cache(ttl=30))
    cpu = time.process_time()
    stop, seconds, settling, decoder = sync(owner, kubeconfig)
    cpu = time.process_time() - cpu - settling
    print(f"fresh start to a synced cache ({owner.cache.node_count()} nodes, "
          f"{owner.cache.pod_count()} bound pods, {len(owner.pending)} pending)")
    line("list + parse + apply, wall", f"{seconds:>10.1f} s")
    line("  CPU of this process (the owner's)", f"{cpu:>10.1f} s")
    line("then settling the heap (gc.freeze)", f"{settling:>10.1f} s")
    return owner, stop, decoder


def bench_comparison(owner, decoder):
    """One comparison as the owner's comparer runs it: lists taken (and cut down) in the
    decoder process, compared in a thread of the owner's process while the owner's thread
    only takes the cache's dump and, later, records the outcome. CPU of each process, the
    time the owner's thread was held, and the owner's peak memory (ru_maxrss never
    falls: a rise is this comparison's)."""
    rss, cpu = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, time.process_time()
    decoder_cpu, started = cpu_seconds(decoder.process.pid), time.perf_counter()
    request = list_for_comparison(decoder, threading.Event())
    owner.feed.put(request)   # behind the watch's items, as the comparer queues it
    held = 0.0
    while True:      # the watch's items, the request, then the comparison's outcome
        item = owner.feed.get()
        applying = time.perf_counter()
        owner.apply(item)
        if type(item) in (CompareRequest, Compared, CompareFailed):
            held += time.perf_counter() - applying
        if type(item) in (Compared, CompareFailed):
            break
    seconds = time.perf_counter() - started
    print(f"one comparison ({len(request.pods)} pods listed; clean: "
          f"{owner.latest_report.clean})")
    line("lists taken and compared, wall", f"{seconds:>10.1f} s")
    line("  the owner's thread held (dump + record)", f"{held * 1000:>10.1f} ms")
    line("  CPU of this process (the owner's)", f"{time.process_time() - cpu:>10.1f} s")
    line("  CPU of the decoder process",
         f"{cpu_seconds(decoder.process.pid) - decoder_cpu:>10.1f} s")
    line("  rise of this process's peak memory",
         f"{(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss) / 1024:>10.0f} MB")
    line("  RSS after it: this process / the decoder process",
         f"{psutil.Process().memory_info().rss / MIB:.0f} / "
         f"{psutil.Process(decoder.process.pid).memory_info().rss / MIB:.0f} MiB")


def bench_watch_rate(kubeconfig, pods):
    """`pods`: how many the cluster holds; timing stops when the last one is applied."""
    owner = CacheOwner(Cache(ttl=30))
    # resume from "0": the watch first, no list (synthetic ADDED for every pod)
    feed = DecoderProcess(owner.feed.put, functools.partial(api, str(kubeconfig)),
                          kinds=("pods",), resume_from={"pods": "0"},
                          options={"watch_timeout": 120})
    feed.start()

    def alive():
        return feed.process.is_alive()
    # The clock starts at the first event applied: starting the decoder process (imports,
    # connecting) is a restart's cost, not the watch's pace.
    while not (first := owner.drain_feed(limit=20000)) and alive():
        time.sleep(0.001)
    start, cpu = time.perf_counter(), time.process_time()
    decoder_cpu = cpu_seconds(feed.process.pid)
    total = [0]

    def applied_all():
        total[0] += owner.drain_feed(limit=20000)
        return first + total[0] >= pods or not alive()
    while not applied_all():
        time.sleep(0.001)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    decoder_cpu = cpu_seconds(feed.process.pid) - decoder_cpu
    feed.stop()
    print("watch events applied to the cache, over HTTP")
    line(f"{total[0]} synthetic ADDED events (watch from resourceVersion 0; "
         f"clock from the first {first} applied)", f"{total[0] / seconds:>10,.0f} /s")
    line("  CPU of this process (the owner's) per event", f"{cpu / total[0] * 1e6:>10.1f} us")
    line("  CPU of the decoder process per event", f"{decoder_cpu / total[0] * 1e6:>10.1f} us")


def bench_publish_delay(kubeconfig, owner, tag, label, count=200):
    recorder = Recorder()
    owner.publisher = recorder
    v1 = api(kubeconfig)
    node = owner.cache.node_names()[0]
    stop = threading.Event()

    def flusher():
        while not stop.is_set():
            owner.drain_feed()
            owner.flush()
            stop.wait(0.1)
    thread = threading.Thread(target=flusher, daemon=True)
    thread.start()
    sent = {}
    for i in range(count):
        name = f"delay-{tag}-{i}"
        sent[name] = time.time()
        v1.create_namespaced_pod("default", {
            "metadata": {"name": name},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "pause"}]}})
        time.sleep(0.01)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        names = {e["name"] for _, e in recorder.seen if e["kind"] == "pod_added"}
        if all(n in names for n in sent):
            break
        time.sleep(0.05)
    stop.set()
    delays = sorted(at - sent[e["name"]] for at, e in recorder.seen
                    if e["kind"] == "pod_added" and e["name"] in sent)
    print(f"change in the cluster to its transition published, {label} ({len(delays)} pods "
          f"created, flush every 100 ms)")
    line("p50", f"{percentile(delays, 0.5) * 1e3:>10.0f} ms")
    line("p99", f"{percentile(delays, 0.99) * 1e3:>10.0f} ms")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=150000)
    parser.add_argument("--comparisons", type=int, default=1,
                        help="one after another: what the processes keep of each")
    args = parser.parse_args()
    tune_gc()
    started = time.perf_counter()
    with served_cluster(args.nodes, args.pods, "--bookmark-interval", "5") as (url, kubeconfig):
        print(f"simulated cluster {url}: {args.nodes} nodes, {args.pods} pods, serving after "
              f"{time.perf_counter() - started:.0f} s")
        owner, stop, decoder = bench_sync(kubeconfig)
        for _ in range(args.comparisons):
            bench_comparison(owner, decoder)
        bench_publish_delay(kubeconfig, owner, "early", "right after the sync (read-model "
                            "backlog being written)")
        bench_publish_delay(kubeconfig, owner, "steady", "steady state")
        stop.set()
        del owner
        gc.unfreeze()   # release the first owner's heap before the next phase
        gc.collect()
        bench_watch_rate(kubeconfig, cluster_pods(url))


if __name__ == "__main__":
    main()
