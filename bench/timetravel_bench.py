"""Time travel at scale: a moment 23 hours back, the diff of two moments an hour apart,
and what checkpoints cost the owner.

    DATABASE_URL=postgres://... .venv/bin/python bench/timetravel_bench.py \
        [--nodes 5000] [--pods 150000] [--rate 1000] [--period 120] [--runs 7]

A cache of `nodes` nodes and `pods` pods (simcluster.generate) is checkpointed as the
owner does (the capture on its thread, the encoding on the writer's). The history is
synthesized, not lived: 24 hours at 1,000 events a second would be 86 million rows, so
only what reading a moment touches is written at the full rate: the two checkpoints
(23 h and 22 h back) and, after each, one checkpoint period of transitions at `rate`
a second (the worst a moment can be from its checkpoint), as the owner writes them
(COPY, with their `replay`); the hours between are left empty (the reads use the
seq/at indexes only). Each read starts from a cleared reconstruction (the process keeps
the last two), so every figure is a full reconstruction: checkpoint decoded, a
period of transitions replayed.
"""
import argparse
import gc
import os
import random
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

import django  # noqa: E402

django.setup()

from benchkit import Ticker, line, percentile  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, connections  # noqa: E402

from schedcache import Cache  # noqa: E402
from simcluster.generate import generate_cluster  # noqa: E402

from dashboard.models import Checkpoint, PrunedHistory, Transition  # noqa: E402
from dashboard.owner.checkpoints import PodReplays, capture  # noqa: E402
from dashboard.owner.projection import TRANSITION_INSERT  # noqa: E402
from dashboard.owner.runner import settle_heap, tune_gc, tune_switching  # noqa: E402
from dashboard.readmodel import moment as moments  # noqa: E402
from dashboard.readmodel.cluster_state import pod_replay  # noqa: E402
from dashboard.readmodel.moment_diff import diff  # noqa: E402
from dashboard.web.pods.past_list import past_pods  # noqa: E402
from dashboard.web.pods.query import PodFilters  # noqa: E402

NOW = datetime.now(timezone.utc).replace(microsecond=0)


def filled_cache(nodes: int, pods: int) -> Cache:
    cluster = generate_cluster(nodes=nodes, pods=pods, zones=3, seed=3)
    cache = Cache(ttl=30)
    for node in cluster.nodes:
        cache.add_node(node)
    for pod in cluster.pods:
        if (pod.get("spec") or {}).get("nodeName"):
            cache.add_pod(pod)
    return cache


def history(cache, start_seq: int, start: datetime, seconds: float, rate: int) -> list:
    """`seconds` of transitions at `rate` a second from `start_seq`: pods added, removed and
    assumed-then-confirmed on the cache's nodes, each with the replay the owner notes."""
    infos = [info for info in cache.get_node_name_to_info_map().values() if info.pods]
    rng = random.Random(start_seq)
    rows, seq = [], start_seq
    total = int(seconds * rate)
    kinds = ("pod_added", "pod_removed", "pod_assumed", "pod_confirmed", "pod_updated")
    for i in range(total):
        seq += 1
        node = rng.choice(infos)
        pod = rng.choice(node.pods)
        kind = kinds[i % len(kinds)]
        uid = pod.key if kind in ("pod_removed", "pod_updated") else f"new-{seq}"
        rows.append({"seq": seq, "at": start + timedelta(seconds=i / rate), "kind": kind,
                     "key": uid, "namespace": pod.namespace, "name": f"{pod.name}-{seq}",
                     "node": node.name, "from_state": "", "to_state": "", "cause": "watch",
                     "actor": "", "detail": "", "generation": seq,
                     "replay": None if kind == "pod_removed" else pod_replay(pod)})
    return rows


def timed(label: str, runs: int, read, cold: bool | None = True) -> None:
    """Wall time (the database's included) and this process's CPU, p50 / p99: on a shared
    machine the wall time holds the waits for a core too. Cold: the checkpoint decoded
    anew each time; warm: the web process still holds it decoded (a second page, or
    another moment after the same checkpoint), the period replayed anew; None: the
    moment itself still held (a page's next read of it: only the read is timed)."""
    walls, cpus = [], []
    for _ in range(runs):
        if cold is not None:
            moments.forget_reconstructions(checkpoints=cold)
        started, cpu = time.perf_counter(), time.thread_time()
        read()
        walls.append(time.perf_counter() - started)
        cpus.append(time.thread_time() - cpu)
    line(f"{label} p50 / p99", f"{percentile(walls, .5) * 1000:.0f} / "
         f"{percentile(walls, .99) * 1000:.0f} ms (CPU {percentile(cpus, .5) * 1000:.0f} / "
         f"{percentile(cpus, .99) * 1000:.0f} ms)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=150_000)
    parser.add_argument("--rate", type=int, default=1000, help="events a second")
    parser.add_argument("--period", type=float, default=60.0, help="checkpoint period, s")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    if connection.vendor == "postgresql":   # emptied for good: the sizes below are the bench's
        with connection.cursor() as cursor:
            cursor.execute("TRUNCATE dashboard_transition, dashboard_checkpoint, "
                           "dashboard_prunedhistory")
    else:
        for model in (Transition, Checkpoint, PrunedHistory):
            model.objects.all().delete()
    print(f"time travel on {connections['default'].vendor}: {args.nodes:,} nodes, "
          f"{args.pods:,} pods, {args.rate:,} events/s, a checkpoint every {args.period:g} s")

    tune_gc()          # as the owner runs: its collector settings, and its heap settled
    tune_switching()
    started = time.perf_counter()
    cache = filled_cache(args.nodes, args.pods)
    settle_heap()
    line("cache filled", f"{time.perf_counter() - started:.1f} s, {cache.pod_count():,} pods")

    # --- the checkpoint's cost -------------------------------------------------------------
    captures, encodes, sizes = [], [], []
    replays = PodReplays()     # the owner's memo: the first checkpoint converts every pod
    with Ticker() as ticker:
        for _ in range(3):
            cpu = time.thread_time()
            taken = capture(cache, 1, NOW, 0, replays)
            captures.append(time.thread_time() - cpu)
            cpu = time.thread_time()
            row = taken.row()
            encodes.append(time.thread_time() - cpu)
            sizes.append(len(row["state"]))
    line("capture on the owner's thread (CPU), p50", f"{percentile(captures, .5) * 1000:.1f} ms")
    line("encoding on the writer's thread (CPU): first, then next",
         f"{encodes[0] * 1000:.0f} ms, {percentile(encodes[1:], .5) * 1000:.0f} ms")
    line("longest GIL wait of another thread meanwhile",
         f"{max(ticker.gaps) * 1000:.1f} ms")
    line("bytes per checkpoint", f"{sizes[0]:,} ({sizes[0] / cache.pod_count():.1f} a pod)")

    # --- the history 23 h and 22 h back ------------------------------------------------------
    transitions_per_period = int(args.period * args.rate)
    seq, ends = 1_000_000_000, []
    for hours in (23, 22):
        at = NOW - timedelta(hours=hours)
        Checkpoint.objects.create(**dict(capture(cache, seq, at, 0).row()))
        rows = history(cache, seq, at, args.period, args.rate)
        started = time.perf_counter()
        TRANSITION_INSERT.run(connection, rows)
        line(f"{len(rows):,} transitions written (COPY) {hours} h back",
             f"{time.perf_counter() - started:.1f} s")
        ends.append(rows[-1]["seq"])
        seq += 10_000_000
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("ANALYZE dashboard_transition")
            cursor.execute("SELECT pg_total_relation_size('dashboard_transition')")
            per_row = cursor.fetchone()[0] / (2 * transitions_per_period)
        else:
            per_row = None

    at, later = str(ends[0]), str(ends[1])
    # The reads are the web's, whose heap holds none of what was built above to write the
    # history: the collector's due pass over it is not theirs to pay.
    gc.collect()
    print(f"a moment 23 h back, {transitions_per_period:,} transitions after its checkpoint:")
    timed("overview (counts, totals)", args.runs,
          lambda: (moments.moment(at).counts(), moments.moment(at).totals()))
    timed("overview, its checkpoint already decoded", args.runs,
          lambda: (moments.moment(at).counts(), moments.moment(at).totals()), cold=False)
    name = next(iter(cache.node_names()))
    timed("a node with its pods", args.runs,
          lambda: (moments.moment(at).node(name), moments.moment(at).pods(node=name)))
    timed("the nodes (all, aggregated)", args.runs, lambda: moments.moment(at).nodes())
    pod_uid = next(iter(moments.moment(at).state.pods))
    timed("the pods list, a page by CPU, the moment held", args.runs,
          lambda: past_pods(moments.moment(at), PodFilters(sort="-cpu")), cold=None)
    timed("one pod, the moment held", args.runs, lambda: moments.moment(at).pod(pod_uid),
          cold=None)
    timed("diff of two moments an hour apart", max(3, args.runs // 2),
          lambda: diff(moments.moment(at), moments.moment(later)))
    iso = (NOW - timedelta(hours=23, seconds=-30)).isoformat()
    timed("an ISO time to its seq", args.runs, lambda: moments.parse_at(iso))

    day = 86_400
    checkpoint_day = sizes[0] * day / args.period
    print(f"growth a day at {args.rate:,} events/s:")
    if per_row is not None:
        line("transitions (table and indexes)",
             f"{per_row:.0f} B a row, {per_row * args.rate * day / 2**30:.1f} GiB a day")
    line("checkpoints", f"{day / args.period:.0f} a day, {checkpoint_day / 2**30:.2f} GiB a day")


if __name__ == "__main__":
    main()
