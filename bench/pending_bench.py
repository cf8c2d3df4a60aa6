"""The Pending page at cluster scale: 2,000 pending pods over 5,000 nodes.

    .venv/bin/python bench/pending_bench.py [--nodes 5000 --pods 150000 --pending 2000 --runs 200]

The owner holds the generated cluster (listed as a relist would, metrics_bench's owner)
and the churn generator's new pods as pending (watch ADDED events); what the owner holds
for them, a pod (tracemalloc). Three timings:

- the sweep of first reasons (dashboard/owner/pending_reasons.py) to its end: how many
  flushes' budgets it takes, and the owner's time in all (pods alike share one diagnosis);
- the `pending_pods` command as the owner answers it: sort the queue, count, one page;
- the page itself minus the Redis hop and HTTP: query.pending_page on the command's
  answer, rendered with pending.html. Target: p99 under 500 ms.
"""
import argparse
import os
import sys
import time
import tracemalloc
from datetime import datetime, timedelta, timezone

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

import django  # noqa: E402

django.setup()

from benchkit import line, percentile  # noqa: E402
from django.template.loader import render_to_string  # noqa: E402
from metrics_bench import synced_owner  # noqa: E402

from simcluster.generate import PodSource  # noqa: E402

from dashboard.owner.decoder import DecodedEvents, digest_pod  # noqa: E402
from dashboard.owner.handlers import CommandHandlers  # noqa: E402
from dashboard.web.pending import query, views  # noqa: E402
from dashboard.wire.extender import BIND_INFO_ANNOTATION  # noqa: E402


def timed(call, runs):
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1e3)
    return f"p50 {percentile(samples, 0.5):>7.2f} ms   p99 {percentile(samples, 0.99):>7.2f} ms"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=150_000)
    parser.add_argument("--pending", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    owner = synced_owner(args.nodes, args.pods)
    source, start = PodSource(seed=2), datetime(2026, 11, 1, tzinfo=timezone.utc)
    new = [digest_pod(source.pending_pod(start + timedelta(seconds=i)), (BIND_INFO_ANNOTATION,))
           for i in range(args.pending)]
    tracemalloc.start()
    owner.apply(DecodedEvents("pods", [("ADDED", record) for record in new]))
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    line("pending pods in the owner", f"{len(owner.pending):>8}")
    line("the owner's memory for them, a pod (traced while they were applied)",
         f"{held / len(new):>8,.0f} B")

    sweep = owner.pending_reasons
    sweep._next, flushes, started = 0.0, 0, time.perf_counter()
    sweep.step(0.0)
    flushes += 1
    while sweep._queue is not None:
        sweep.step(0.0)
        flushes += 1
    line(f"the sweep of first reasons ({len(sweep.counts)} reasons)",
         f"{time.perf_counter() - started:>8.2f} s over {flushes} flushes")

    handler = CommandHandlers(owner).handlers()["pending_pods"]
    top = next(iter(sweep.counts), "")
    line("pending_pods, first page of 50", timed(lambda: handler({}, "bench"), args.runs))
    line("pending_pods, top reason's first page",
         timed(lambda: handler({"reason": top}, "bench"), args.runs))
    line("pending_pods, a page 30 deep",
         timed(lambda: handler({"offset": 1450}, "bench"), args.runs))

    query.owner_client.pending_pods = lambda answer_args, timeout: handler(answer_args, "bench")

    def page():
        listing = query.pending_page(query.PendingFilters(), datetime.now(timezone.utc))
        render_to_string("dashboard/pending.html#pending-list",
                         {"listing": listing, "filters": listing.filters,
                          "groups": views._groups(listing), "pager_query": ""})
    page()      # the template's first compilation is not the page's
    line("the page's fragment without Redis and HTTP (target p99 < 500 ms)",
         timed(page, args.runs))


if __name__ == "__main__":
    main()
