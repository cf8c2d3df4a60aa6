"""kube-scheduler's stand-in at the demo's size: what a period costs the Celery worker.

A simulated cluster (default 100 nodes, 2,000 pods, churn 20/s, as `manage.py up`) in
its own process; here, the stand-in's view (two reflectors), its periods once a second,
and a fake extender answering as the captures' recording extender did (it binds
through the API server itself). Prints the first sync's CPU, the period thread's CPU
(p50, max) and the whole process's CPU per period (watches and the fake extender's
HTTP included), against what listing every pod and building a cache each period costs,
and the process's memory (RSS after the first sync and after the periods, and its peak:
the view's share grows with the pods, issue 26) with the pending pods it holds (under
churn they pile up, as in the whole stack: the churn creates more a second than
`--limit` binds a period).

    .venv/bin/python bench/standin_bench.py [--nodes 100] [--pods 2000] [--churn 20]
                                            [--periods 30] [--limit 20]
                                            [--no-alternative]

With `--loop SECONDS` it runs instead the process's own loop (runner.StandInLoop: steps
back to back while they place) for that long, on a cluster as `up` makes it (2% of the
pods pending, the churn holding the pod count), and prints what it placed a second and
the pending pods it began and ended with: the stand-in's pace without the owner's
extender (issue 26's 15-minute runs, where the pending pods piled up).

    .venv/bin/python bench/standin_bench.py --nodes 5000 --pods 150000 --churn 200 --loop 300
"""
import argparse
import ctypes
import gc
import json
import os
import resource
import sys
import tempfile
import threading
import time
import tracemalloc
import urllib.request
from collections import deque
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "extender"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

import django  # noqa: E402
import psutil  # noqa: E402

django.setup()

from benchkit import core_api, line, percentile, served_cluster  # noqa: E402

from schedcache import Cache, podinfo  # noqa: E402
from scheduling import DefaultAlgorithm  # noqa: E402

from dashboard.kube.client import read_json  # noqa: E402
from dashboard.standin import standin  # noqa: E402
from dashboard.standin.runner import StandInLoop  # noqa: E402
from dashboard.standin.standin_view import ClusterView  # noqa: E402
from tests.dashboard.standin.fake_extender import FakeExtender  # noqa: E402


def listed_each_period(api) -> float:
    """CPU seconds of one list of every node and pod into a fresh cache (the alternative)."""
    began = time.process_time()
    pods = read_json(api.list_pod_for_all_namespaces(_preload_content=False))["items"]
    cache = Cache(ttl=0)
    for node in read_json(api.list_node(_preload_content=False))["items"]:
        cache.add_node(node)
    for pod in pods:
        if pod["spec"].get("nodeName"):
            cache.add_pod(pod)
    DefaultAlgorithm(cache).refresh()
    return time.process_time() - began


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--churn", type=float, default=20.0)
    parser.add_argument("--periods", type=int, default=30)
    parser.add_argument("--limit", type=int, default=20,
                        help="pods attempted a period (manage.py standin's --limit)")
    parser.add_argument("--no-alternative", action="store_true",
                        help="leave out listing every pod into a fresh cache (one unpaged "
                             "list: 5 GB and minutes at 150,000 pods)")
    parser.add_argument("--loop", type=float, default=0.0, metavar="SECONDS",
                        help="run the stand-in's own loop this long instead of the periods")
    parser.add_argument("--census", type=int, default=0, metavar="TYPES",
                        help="with --loop: count the collector's objects by type at the "
                             "window's start and end and print the types that grew most "
                             "with what holds a few new ones (a few seconds each; nothing "
                             "traced meanwhile, the RSS figures then count the census too)")
    parser.add_argument("--trace", type=int, default=0, metavar="LINES",
                        help="with --loop: trace the window's allocations and print the "
                             "lines holding the most at its end (slows the loop)")
    args = parser.parse_args()
    if args.loop:
        return run_loop(args)
    with served_cluster(args.nodes, args.pods, "--churn", str(args.churn)) as (url, kubeconfig):
        api = core_api(kubeconfig)
        extender = FakeExtender(core_api(kubeconfig))
        began, began_wall = time.process_time(), time.monotonic()
        scheduler = standin.StandIn(api, standin.HttpDoor(extender.address, 5.0),
                                    ClusterView(core_api(kubeconfig)).start())
        try:
            while not scheduler.view.sync(60):    # the first lists, however long they take
                pass
            scheduler.period()
            first, first_wall = time.process_time() - began, time.monotonic() - began_wall
            synced_rss = psutil.Process().memory_info().rss
            synced_pending = len(scheduler.view.pending)
            threads, outcomes = [], dict.fromkeys(standin.OUTCOMES, 0)
            began = time.process_time()
            for _ in range(args.periods):
                started = time.monotonic()
                thread_began = time.thread_time()
                for name, count in scheduler.period(args.limit).items():
                    outcomes[name] += count
                threads.append(time.thread_time() - thread_began)
                time.sleep(max(0.0, 1.0 - (time.monotonic() - started)))
            whole = (time.process_time() - began) / args.periods
            steady_rss = psutil.Process().memory_info().rss
            steady_pending = len(scheduler.view.pending)
            peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 2**10
            alternative = None if args.no_alternative else listed_each_period(api)
        finally:
            scheduler.close()
            extender.close()
    print(f"stand-in: {args.nodes} nodes, {args.pods} pods, churn {args.churn:g}/s, "
          f"{args.periods} periods of 1 s, up to {args.limit} pods each")
    line("first sync (lists into the view), CPU / wall", f"{first:.2f} / {first_wall:.1f} s")
    line("a period, its thread's CPU p50 / max",
         f"{percentile(threads, 0.5) * 1000:.1f} / {max(threads) * 1000:.1f} ms")
    line("a period, the whole process's CPU (watches, fake extender)", f"{whole * 1000:.0f} ms")
    if alternative is not None:
        line("listing every pod into a fresh cache instead, CPU", f"{alternative * 1000:.0f} ms")
    line("outcomes", outcomes)
    line("pending pods in the view after the first sync / after the periods",
         f"{synced_pending:,} / {steady_pending:,}")
    line("RSS after the first sync / after the periods / peak (the cluster apart)",
         f"{synced_rss / 2**20:.0f} / {steady_rss / 2**20:.0f} / "
         f"{peak_rss / 2**20:.0f} MiB")


def label_sharing(cache) -> str:
    """How the placed pods' labels are shared: distinct label dicts held against distinct
    label sets (a pod with equal labels should hold the same dict: schedcache.podinfo),
    and the size of the table that shares them."""
    held = [info.labels for info in map(cache.pod_info, cache.pod_keys())
            if info is not None and info.labels]
    objects = {id(labels) for labels in held}
    sets = {frozenset(labels.items()) for labels in held}
    return (f"{len(held):,} pods: {len(objects):,} dicts for {len(sets):,} sets; "
            f"table {len(podinfo._label_sets):,}")


def pymalloc() -> str:
    """pymalloc's arenas against the bytes its blocks hold (sys._debugmallocstats, which
    writes to the C stderr): what the arenas hold beyond the blocks is free memory kept
    inside the process, not live objects."""
    with tempfile.TemporaryFile() as out:
        sys.stderr.flush()
        saved = os.dup(2)
        try:
            os.dup2(out.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        stats = {}
        for text in out.read().decode().splitlines():
            name, _, value = text.partition("=")
            if text.startswith("# ") and value:
                stats.setdefault(name[2:].strip(), int(value.strip().replace(",", "")))
    return (f"{stats['arenas allocated current']:,} arenas of 1 MiB, "
            f"{stats['bytes in allocated blocks'] / 2**20:,.0f} MiB in blocks, "
            f"{stats['bytes in available blocks'] / 2**20:,.0f} MiB free in pools")


def census() -> tuple:
    """The objects the garbage collector follows (containers: no strings or numbers), by
    type, and the ids of them all."""
    counts, ids = {}, set()
    for obj in gc.get_objects():
        name = type(obj).__qualname__
        counts[name] = counts.get(name, 0) + 1
        ids.add(id(obj))
    return counts, ids


def print_census(start, end, types: int) -> None:
    """The types that grew most, and of the first two, three new objects each with what
    holds them."""
    (start_counts, start_ids), (end_counts, _) = start, end
    grown = sorted(((end_counts.get(t, 0) - start_counts.get(t, 0), t)
                    for t in {**start_counts, **end_counts}), reverse=True)
    print("the collector's objects that grew most over the window (type: start -> end):")
    for delta, name in grown[:types]:
        print(f"  {name:40} {start_counts.get(name, 0):>10,} -> {end_counts.get(name, 0):>10,}"
              f"  ({delta:+,})")
    for _, name in grown[:2]:
        new = [o for o in gc.get_objects() if type(o).__qualname__ == name
               and id(o) not in start_ids][:3]
        for obj in new:
            holders = [type(h).__qualname__ for h in gc.get_referrers(obj) if h is not new]
            print(f"  new {name}: {repr(obj)[:120]}; held by {holders[:4]}")


def run_loop(args):
    """The stand-in's own loop for `args.loop` seconds after its first sync."""
    with served_cluster(args.nodes, args.pods, "--churn", str(args.churn),
                        "--pending-fraction", "0.02") as (url, kubeconfig):
        # the pod count held, as `up` configures the demo's churn
        urllib.request.urlopen(urllib.request.Request(
            f"{url}/simcluster/v1/churn", data=json.dumps({"steady": True}).encode(),
            headers={"Content-Type": "application/json"}, method="POST")).read()
        extender = FakeExtender(core_api(kubeconfig))
        extender.calls = deque(maxlen=0)    # the bodies it would record would be the RSS
        loop = StandInLoop(lambda: core_api(kubeconfig), extender.address, call_timeout=5.0,
                           period=1.0, limit=args.limit)
        tally, steps = dict.fromkeys(standin.OUTCOMES, 0), []
        step = loop.step

        def counted_step(now=None):
            began = time.monotonic()
            counts = step(now)
            if any(counts.values()):
                steps.append(time.monotonic() - began)
                for name, count in counts.items():
                    tally[name] += count
            return counts

        loop.step = counted_step
        stop = threading.Event()
        thread = threading.Thread(target=loop.run, args=(stop,))
        try:
            thread.start()
            began = time.monotonic()
            while not steps and time.monotonic() - began < 900:
                time.sleep(1.0)   # until the first step that attempted a pod: lists are in
            synced = time.monotonic() - began
            start_pending, start_tally = len(loop.scheduler.view.pending), dict(tally)
            start_labels = label_sharing(loop.scheduler.view.cache)
            start_census = census() if args.census else None
            start_rss, start_blocks = psutil.Process().memory_info().rss, sys.getallocatedblocks()
            start_pymalloc = pymalloc()
            if args.trace:
                tracemalloc.start()
            time.sleep(args.loop)
            end_pending = len(loop.scheduler.view.pending)
            end_rss, end_blocks = psutil.Process().memory_info().rss, sys.getallocatedblocks()
            end_pymalloc = pymalloc()
            ctypes.CDLL("libc.so.6").malloc_trim(0)
            trimmed_rss = psutil.Process().memory_info().rss
            held = tracemalloc.take_snapshot() if args.trace else None
            tracemalloc.stop()
            end_labels = label_sharing(loop.scheduler.view.cache)
            end_census = census() if args.census else None
        finally:
            stop.set()
            thread.join()
            extender.close()
    placed = {name: tally[name] - start_tally[name] for name in tally}
    print(f"stand-in loop: {args.nodes} nodes, {args.pods} pods (2% pending), churn "
          f"{args.churn:g}/s, {args.loop:g} s after its first sync, up to {args.limit} a step")
    line("first sync", f"{synced:.0f} s")
    line("outcomes in the window", placed)
    line("binds a second / attempts a second",
         f"{placed['bind'] / args.loop:.1f} / "
         f"{sum(n for k, n in placed.items() if k != 'victims') / args.loop:.1f}")
    line("a step's wall time p50 / p99",
         f"{percentile(steps, 0.5) * 1000:.0f} / {percentile(steps, 0.99) * 1000:.0f} ms")
    line("pending pods at the window's start / end", f"{start_pending:,} / {end_pending:,}")
    line("RSS at the window's start / end / after malloc_trim (the fake extender's too)",
         f"{start_rss / 2**20:.0f} / {end_rss / 2**20:.0f} / {trimmed_rss / 2**20:.0f} MiB")
    line("Python's allocated blocks at the window's start / end",
         f"{start_blocks:,} / {end_blocks:,}")
    line("pymalloc at the window's start", start_pymalloc)
    line("pymalloc at the window's end", end_pymalloc)
    line("placed pods' labels at the window's start", start_labels)
    line("placed pods' labels at the window's end", end_labels)
    if start_census is not None:
        print_census(start_census, end_census, args.census)
    if held is not None:
        stats = held.statistics("lineno")
        print(f"allocated in the window and held at its end: "
              f"{sum(s.size for s in stats) / 2**20:,.1f} MiB; the lines holding the most:")
        for stat in stats[:args.trace]:
            frame = stat.traceback[0]
            print(f"  {stat.size / 2**20:8.1f} MiB  {stat.count:9,}  "
                  f"{frame.filename}:{frame.lineno}")


if __name__ == "__main__":
    main()
