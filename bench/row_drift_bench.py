"""row drift benchmark: what comparing the read model's rows with the cache costs.

    DATABASE_URL=postgres://... .venv/bin/python bench/row_drift_bench.py [--nodes 2000 --pods 60000]

An owner is fed a generated cluster (as the decoder hands it over), its rows written by
the real writer into DATABASE_URL's database (migrated here; its pod and node rows are
replaced), then compared once with the cluster's lists as the comparer does. Printed: what
the comparison holds the owner's thread (the dump and the rows' sets at the dump), the
comparison thread's wall time, the rows' part of it (every row read as it is compared), and the
longest and p99 gap of a thread ticking every millisecond beside it (the GIL the owner's
thread waits for meanwhile). With `--memory`, then, under tracemalloc: what the lists hold
as the decoder hands them over (and holds them while it lists), and the most the same
comparison held above them at once, in its thread, rows included (its peak).

    DATABASE_URL=... .venv/bin/python bench/row_drift_bench.py --nodes 5000 --pods 150000 --memory
"""
import argparse
import gc
import os
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

import django  # noqa: E402

django.setup()

from benchkit import Ticker, line, percentile  # noqa: E402
from django.core.management import call_command  # noqa: E402

from schedcache import Cache  # noqa: E402
from simcluster.generate import generate_cluster  # noqa: E402

from dashboard.models import NodeRecord, PodRecord  # noqa: E402
from dashboard.owner import row_drift  # noqa: E402
from dashboard.owner.comparing import CompareRequest  # noqa: E402
from dashboard.owner.decoder import (  # noqa: E402
    COMPARISON_PAGE,
    DecodedList,
    DecodedPage,
    comparable_node,
    comparable_pod,
    digest_pod,
)
from dashboard.owner.listed_pages import ListedPages  # noqa: E402
from dashboard.owner.owner import CacheOwner  # noqa: E402
from dashboard.owner.projection import ProjectionWriter  # noqa: E402
from dashboard.owner.runner import settle_heap, tune_gc, tune_switching  # noqa: E402


def written_owner(cluster, writer) -> CacheOwner:
    """The cluster fed to an owner, flushed until every row is written (pruned)."""
    owner = CacheOwner(Cache(ttl=30), writer=writer, epoch=int(time.time()))
    for kind, items in (("nodes", cluster.nodes),
                        ("pods", [digest_pod(pod) for pod in cluster.pods])):
        owner.apply(DecodedPage(kind, items, True))
        owner.apply(DecodedList(kind, "1"))
    while True:
        owner.flush()
        writer.wait_idle()
        if owner.rows.backlog() == 0 and owner.comparer.rows_written():
            owner.flush()      # the prune's batch
            writer.wait_idle()
            return owner


def comparison_request(cluster) -> CompareRequest:
    """The lists as the decoder hands them over (dashboard/owner/decoder.py)."""
    return CompareRequest(ListedPages.of(map(comparable_node, cluster.nodes), COMPARISON_PAGE),
                          ListedPages.of(map(comparable_pod, cluster.pods), COMPARISON_PAGE),
                          "1")


def traced_comparison(owner, cluster):
    """The lists' size and the comparison's peak above them, traced (see the module doc)."""
    gc.collect()
    tracemalloc.start()
    request = comparison_request(cluster)
    gc.collect()
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    owner.apply(request)
    compared = owner.feed.get(timeout=600)
    peak = tracemalloc.get_traced_memory()[1] - held
    tracemalloc.stop()
    owner.apply(compared)
    pods = len(cluster.pods)
    line("the lists, traced", f"{held / 1e6:>8.1f} MB  ({held / pods:,.0f} B a pod)")
    line("the comparison's peak above them, traced",
         f"{peak / 1e6:>8.1f} MB  ({peak / pods:,.0f} B a pod)")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--pods", type=int, default=60000)
    parser.add_argument("--memory", action="store_true",
                        help="then trace the lists' and the comparison's memory")
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    PodRecord.objects.all().delete()
    NodeRecord.objects.all().delete()
    cluster = generate_cluster(nodes=args.nodes, pods=args.pods, zones=5, seed=1,
                               pending_fraction=0.02)
    tune_gc()
    tune_switching()
    writer = ProjectionWriter().start()
    try:
        owner = written_owner(cluster, writer)
        settle_heap()
        print(f"{owner.cache.node_count()} nodes, {owner.cache.pod_count()} bound pods, "
              f"{len(owner.pending)} pending; {PodRecord.objects.count()} pod rows")
        request = comparison_request(cluster)
        with Ticker() as ticker:
            started = time.perf_counter()
            owner.apply(request)                   # the owner's thread: the dump, the sets
            held = time.perf_counter() - started
            compared = owner.feed.get(timeout=600)
            took = time.perf_counter() - started
        owner.apply(compared)
        report = owner.comparer.journal.batch.comparer_runs[-1]["report"]
        line("owner's thread held by the comparison's start", f"{held * 1e3:>8.1f} ms")
        line("comparison thread, cache and rows, wall", f"{took:>8.2f} s")
        line("  longest / p99 gap between 1 ms ticks of another thread",
             f"{max(ticker.gaps) * 1e3:>7.1f} / {percentile(ticker.gaps, 0.99) * 1e3:>7.1f} ms")
        at = owner.rows.at_dump(writer.submitted())
        dump = owner.cache.dump()
        cpu, wall = time.thread_time(), time.perf_counter()
        row_drift.compare_rows(dump, at, *row_drift.read_rows())   # read as compared
        line("rows' part: read and compare every row, CPU / wall",
             f"{(time.thread_time() - cpu) * 1e3:>7.0f} / "
             f"{(time.perf_counter() - wall) * 1e3:>7.0f} ms")
        line("rows found wrong", sum(len(report.get(k, ())) for k in
                                     ("rows_missing", "rows_extra", "rows_stale")))
        if args.memory:
            traced_comparison(owner, cluster)
    finally:
        writer.close()


if __name__ == "__main__":
    main()
