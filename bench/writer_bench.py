"""The read-model writer's cost to the owner's process: CPU per batch, and the GIL.

    DATABASE_URL=postgres://... .venv/bin/python bench/writer_bench.py [--rows 3000,20000]

The writer thread shares the owner's process: every millisecond of CPU it spends
outside a database wait holds the GIL the owner's thread (kube-scheduler's calls,
the feed) needs. This writes batches of pod rows as the owner builds them (a flush
after a sync holds 3,000; a writer that fell behind merges up to 20,000), each
twice (an insert, then an upsert of the same keys), on DATABASE_URL's database
(migrated here), with the owner's collector settings. It prints the writer's CPU
per batch and, from a thread ticking every millisecond beside it, the longest and
the 99th-percentile wait between its ticks: what the owner's thread waits for at worst.
"""
import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

import django  # noqa: E402

django.setup()

from benchkit import Ticker, line, percentile  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connections  # noqa: E402

from dashboard.models import PodRecord  # noqa: E402
from dashboard.owner import projection  # noqa: E402
from dashboard.owner.projection import Batch  # noqa: E402
from dashboard.owner.runner import tune_gc, tune_switching  # noqa: E402


def pod_row(i: int, seq: int) -> dict:
    return {"namespace": f"team-{i % 40}", "name": f"web-{i}-7f9c4", "node": f"node-{i % 500}",
            "zone": f"zone-{i % 5}", "state": "Added", "binding_finished": False,
            "assumed_at": None, "deadline": None, "phase": "Running",
            "resource_version": str(seq),
            "labels": {"app": f"web-{i % 90}", "tier": "frontend"}, "milli_cpu": 250,
            "scalar_resources": {},
            "memory": 512 << 20, "priority": 0, "seq": seq,
            "changed_at": "2026-11-22T10:00:00Z", "owner_epoch": 1}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="3000,20000")
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    tune_gc()
    tune_switching()
    print(f"writer on {connections['default'].vendor}, pod rows a batch")
    for size in map(int, args.rows.split(",")):
        for attempt in ("insert", "upsert"):
            batch = Batch(pods={f"bench-{i}": pod_row(i, i) for i in range(size)})
            with Ticker() as ticker:
                cpu, wall = time.thread_time(), time.perf_counter()
                projection.write(batch)
                cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
            line(f"{size} rows, {attempt}: writer CPU / wall",
                 f"{cpu * 1e3:>7.1f} / {wall * 1e3:>7.1f} ms")
            line("  longest / p99 gap between 1 ms ticks of another thread",
                 f"{max(ticker.gaps) * 1e3:>7.1f} / {percentile(ticker.gaps, 0.99) * 1e3:>7.1f} ms")
        PodRecord.objects.filter(uid__startswith="bench-").delete()


if __name__ == "__main__":
    main()
