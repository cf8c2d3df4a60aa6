"""cache dump benchmark: the `dump_cache` command's pages over a large cluster.

    .venv/bin/python bench/cache_dump_bench.py [--nodes 5000 --pods 150000 --pending 0.02]

The owner is fed the generated cluster as the decoder hands it over (lists of records);
then the whole dump is read as `manage.py dumpcache` reads it, page after page, at two
page sizes. Each timed call is what holds the owner's loop for one page (the handler: the
cursor over every NodeInfo or pending pod, the copies, the nominated pods, the answer as
a dict); the page's JSON size is what crosses Redis. Target at 5,000 nodes / 150,000
pods: a page of the default size holds the loop under 50 ms (p99), and no page is over 1 MB.
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

import orjson  # noqa: E402
from benchkit import line, percentile  # noqa: E402

from schedcache import Cache  # noqa: E402
from simcluster.generate import generate_cluster  # noqa: E402

from dashboard.owner.decoder import DecodedList, DecodedPage, digest_pod  # noqa: E402
from dashboard.owner.handlers import CommandHandlers  # noqa: E402
from dashboard.owner.owner import CacheOwner  # noqa: E402
from dashboard.owner.runner import settle_heap, tune_gc  # noqa: E402
from dashboard.wire.cache_dump import DEFAULT_LIMIT, MAX_LIMIT, PARTS  # noqa: E402


def fed_owner(cluster) -> CacheOwner:
    owner = CacheOwner(Cache(ttl=30))
    for kind, items in (("nodes", cluster.nodes),
                        ("pods", [digest_pod(pod) for pod in cluster.pods])):
        owner.apply(DecodedPage(kind, items, True))
        owner.apply(DecodedList(kind, "1"))
    return owner


def read_dump(owner, part, limit):
    """Every page of a part: (seconds, JSON bytes) each."""
    handlers, pages, after = CommandHandlers(owner), [], ""
    while after is not None:
        started = time.perf_counter()
        page = handlers.dump_cache({"part": part, "after": after, "limit": limit}, "bench")
        seconds = time.perf_counter() - started
        pages.append((seconds, len(orjson.dumps(page))))
        after = page["next"]
    return pages


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=150000)
    parser.add_argument("--pending", type=float, default=0.02, help="pending fraction")
    args = parser.parse_args()
    cluster = generate_cluster(nodes=args.nodes, pods=args.pods, zones=5, seed=1,
                               pending_fraction=args.pending)
    tune_gc()
    owner = fed_owner(cluster)
    settle_heap()       # as the owner's loop does once synced
    print(f"{owner.cache.node_count()} nodes, {owner.cache.pod_count()} bound pods, "
          f"{len(owner.pending)} pending")
    for limit in (DEFAULT_LIMIT, MAX_LIMIT):
        for part in PARTS:
            pages = read_dump(owner, part, limit)
            held = [seconds * 1000 for seconds, _ in pages]
            sizes = [size for _, size in pages]
            print(f"{part}, {limit} a page: {len(pages)} pages")
            line("owner's loop held a page, p50 / p99 / max",
                 f"{percentile(held, 0.5):>6.1f} / {percentile(held, 0.99):>6.1f} / "
                 f"{max(held):>6.1f} ms")
            line("the whole part", f"{sum(held):>10.0f} ms")
            line("page JSON, p50 / max", f"{percentile(sizes, 0.5) / 1024:>6.0f} / "
                                         f"{max(sizes) / 1024:>6.0f} KB")


if __name__ == "__main__":
    main()
