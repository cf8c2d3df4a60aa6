"""The events page over a long history: the newest page, a page far back by cursor, the
filters, and an export of 100,000 rows streamed through the ASGI handler.

    .venv/bin/python bench/events_bench.py [--transitions 500000] [--requests 30]

In this process, on DATABASE_URL's database (else a fresh SQLite file) and REDIS_URL's
Redis (else an embedded one): `--transitions` history rows go in (about two hours at 70
a second: a third of them no-change updates, 200 namespaces, 1,000 nodes, one actor in a
thousand), then each query runs as GET /events/ through Django's test client as a
logged-in user, and the CSV and JSON-lines exports run through the ASGI handler (as
daphne serves them), timed to their last byte, with this process's peak memory growth.
The rows are deleted afterwards. Figures are printed, nothing is asserted.
"""
import argparse
import asyncio
import resource
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone as tz
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchkit import line, percentile  # noqa: E402
from ui_bench import configure  # noqa: E402

SEQ_BASE = 10**12     # the bench's rows, apart from any history the database holds
T0 = datetime(2026, 1, 1, tzinfo=tz.utc)


def fill_history(count: int):
    from dashboard.models import Transition

    batch = []
    for i in range(count):
        unchanged = i % 3 == 0
        batch.append(Transition(
            seq=SEQ_BASE + i, at=T0 + timedelta(seconds=i / 70), key=f"bench-uid-{i % 50_000}",
            kind="pod_updated" if unchanged else "pod_added", namespace=f"ns-{i % 200}",
            name=f"pod-{i % 50_000}", node=f"node-{i % 1000}", cause="watch",
            actor="alice" if i % 1000 == 7 else "", from_state="Added" if unchanged else "Initial",
            to_state="Added"))
        if len(batch) == 5000:
            Transition.objects.bulk_create(batch)
            batch = []
    Transition.objects.bulk_create(batch)


def bench(count: int, requests: int):
    from django.contrib.auth import get_user_model
    from django.test import AsyncClient, Client, override_settings

    user, _ = get_user_model().objects.get_or_create(username="events-bench")
    client = Client(SERVER_NAME="127.0.0.1")   # one of the default ALLOWED_HOSTS
    client.force_login(user)
    far_back = SEQ_BASE + count // 50
    middle = T0 + timedelta(seconds=count / 140)
    queries = [
        ("newest page", {}),
        ("newest page, no-change updates shown", {"unchanged": "shown"}),
        ("a page far back (2% from the oldest)", {"before": far_back}),
        ("namespace", {"namespace": "ns-7"}),
        ("node, far back", {"node": "node-3", "before": far_back}),
        ("actor (1 in 1,000)", {"actor": "alice"}),
        ("pod by uid", {"pod": "bench-uid-123"}),
        ("pod by namespace/name", {"pod": "ns-123/pod-123"}),
        ("a minute's window in the middle", {"since": middle.isoformat(),
                                             "until": (middle + timedelta(minutes=1)).isoformat()}),
        ("actor that matches nothing (scans all)", {"actor": "nobody"}),
    ]
    for label, query in queries:
        timings = []
        for i in range(requests + 1):
            started = time.perf_counter()
            response = client.get("/events/", query)
            assert response.status_code == 200, (query, response.status_code)
            if i:                          # the first warms caches
                timings.append(time.perf_counter() - started)
        line(f"GET /events/ {label}", f"p50 {percentile(timings, 0.5) * 1000:>7.1f} / "
                                      f"p99 {percentile(timings, 0.99) * 1000:>7.1f} ms")

    async_client = AsyncClient()
    async_client.force_login(user)
    for form in ("csv", "jsonl"):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        started = time.perf_counter()
        with override_settings(ALLOWED_HOSTS=["testserver"]):   # the ASGI test client's host
            size, lines = asyncio.run(streamed(async_client,
                                               f"/events/?unchanged=shown&format={form}"))
        took = time.perf_counter() - started
        grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
        line(f"export {form}: {lines:,} lines, {size / 1e6:.1f} MB",
             f"{took:>6.2f} s, {lines / took:,.0f} rows/s, peak RSS +{grown / 1024:.0f} MB")
    user.delete()


async def streamed(client, url) -> tuple[int, int]:
    response = await client.get(url)
    assert response.status_code == 200 and response.streaming, (url, response.status_code)
    size = lines = 0
    async for part in response.streaming_content:
        size += len(part)
        lines += part.count(b"\n" if isinstance(part, bytes) else "\n")
    return size, lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--transitions", type=int, default=500_000)
    parser.add_argument("--requests", type=int, default=30)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="events-bench-") as tmp:
        redis_server = configure(Path(tmp))
        from django.db import connection

        from dashboard.models import Transition
        try:
            started = time.perf_counter()
            fill_history(args.transitions)
            if connection.vendor == "postgresql":   # as autovacuum would
                with connection.cursor() as cursor:
                    cursor.execute("VACUUM ANALYZE dashboard_transition")
            print(f"events page over {args.transitions:,} transitions ({connection.vendor})")
            line(f"{args.transitions:,} transitions inserted",
                 f"{time.perf_counter() - started:>6.1f} s")
            bench(args.transitions, args.requests)
        finally:
            Transition.objects.filter(seq__gte=SEQ_BASE).delete()
            if redis_server is not None:
                redis_server.terminate()
                redis_server.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
