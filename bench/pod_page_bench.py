"""The pods page at 150,000 pods and the heat map at 5,000 nodes: the query, the live
push's render, the whole page.

    .venv/bin/python bench/pod_page_bench.py [--pods 150000] [--nodes 5000] [--requests 300]

In this process, on DATABASE_URL's database (else a fresh SQLite file) and REDIS_URL's
Redis (else an embedded one): `--pods` read-model rows go in (ui_bench's spread over
namespaces, nodes, zones and states), then ui_bench's filtered, sorted and paged queries
run three ways: `query_pods` alone (the SQL), the pods list's live push (the rows
partial a websocket viewer gets), and GET /pods/ through Django's test client as a
logged-in user (middleware, session, the page with its state tabs); the queries include
the last page by cursor. Then `--nodes` node rows: the heat map's read, a live push of
the cells that moved (a tenth of the nodes), and GET /heatmap/. The rows are deleted
afterwards. Figures are printed, nothing is asserted.
"""
import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchkit import line, percentile  # noqa: E402
from ui_bench import REST_QUERIES, configure, fill_nodes, fill_read_model, last_cursor  # noqa: E402


def percentiles(timings) -> str:
    return (f"p50 {percentile(timings, 0.5) * 1000:>6.1f} / "
            f"p99 {percentile(timings, 0.99) * 1000:>6.1f} ms")


def bench(requests: int):
    from django.contrib.auth import get_user_model
    from django.http import QueryDict
    from django.template.loader import render_to_string
    from django.test import Client

    from dashboard.web.pods.query import PodFilters, query_pods
    from dashboard.web.pods.views import pod_list_context

    user, _ = get_user_model().objects.get_or_create(username="pod-page-bench")
    client = Client(SERVER_NAME="127.0.0.1")   # one of the default ALLOWED_HOSTS
    client.force_login(user)
    rng = random.Random(7)

    def query_only(q):
        query_pods(PodFilters.parse(QueryDict(q)))

    def push(q):
        render_to_string("dashboard/pods.html#pod-rows",
                         pod_list_context(PodFilters.parse(QueryDict(q)), form=False))

    def page(q):
        response = client.get(f"/pods/?{q}")
        assert response.status_code == 200, (q, response.status_code)

    for label, run in [("query_pods (SQL: count + page)", query_only),
                       ("live push: the rows partial rendered", push),
                       ("GET /pods/ (whole page, state tabs)", page)]:
        timings, by_query = [], {}
        for i in range(requests + len(REST_QUERIES)):
            query = REST_QUERIES[i % len(REST_QUERIES)].format(
                page=rng.randint(1, 20), n=rng.randrange(50), node=rng.randrange(1000),
                zone=rng.randrange(5), last=last_cursor())
            started = time.perf_counter()
            run(query)
            if i >= len(REST_QUERIES):      # the first round warms caches
                timings.append(time.perf_counter() - started)
                by_query.setdefault(REST_QUERIES[i % len(REST_QUERIES)], []).append(timings[-1])
        line(f"{label}, {len(timings)} requests", percentiles(timings))
        for query, ts in by_query.items():
            line(f"  {query.split('&page')[0][:48]}", f"p50 {statistics.median(ts) * 1000:>6.1f} ms")
    bench_heat_map(client, requests)
    user.delete()


def bench_heat_map(client, requests):
    from django.template.loader import render_to_string

    from dashboard.models import NodeRecord
    from dashboard.web.nodes import heatmap
    from dashboard.web.nodes.views import heatmap_context
    nodes = NodeRecord.objects.count()

    def moved():
        """A live push after a tenth of the nodes moved: read, compare, render the cells."""
        before = heatmap.heat_map("cpu")
        changed = heatmap.changes(before, heatmap.HeatMap("cpu", [
            (zone, [heatmap.HeatCell(c.name, (c.percent or 0) + (i % 10 == 0), "cpu")
                    for i, c in enumerate(cells)]) for zone, cells in before.zones]))
        render_to_string("dashboard/heatmap.html#heat-changes",
                         dict(heatmap_context("cpu", before), cells_html=heatmap.cells_html(changed)))

    def page():
        response = client.get("/heatmap/?metric=cpu")
        assert response.status_code == 200, response.status_code

    for label, run in [(f"heat map read ({nodes:,} nodes)", lambda: heatmap.heat_map("cpu")),
                       ("heat map live push (a tenth of the cells moved)", moved),
                       ("GET /heatmap/ (whole page)", page)]:
        timings = []
        for i in range(requests // 3 + 3):
            started = time.perf_counter()
            run()
            if i >= 3:
                timings.append(time.perf_counter() - started)
        line(f"{label}, {len(timings)} runs", percentiles(timings))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=150_000)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--requests", type=int, default=300)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="pod-page-bench-") as tmp:
        redis_server = configure(Path(tmp))
        from django.db import connection

        from dashboard.models import NodeRecord, PodRecord
        try:
            started = time.perf_counter()
            fill_read_model(args.pods)
            fill_nodes(args.nodes, 0)
            if connection.vendor == "postgresql":   # as autovacuum would, long before a person looks
                with connection.cursor() as cursor:
                    cursor.execute("VACUUM ANALYZE dashboard_podrecord")
            print(f"pods page at {args.pods:,} pods, heat map at {args.nodes:,} nodes "
                  f"({connection.vendor})")
            line(f"{args.pods:,} read-model pods inserted",
                 f"{time.perf_counter() - started:>6.1f} s")
            bench(args.requests)
        finally:
            PodRecord.objects.filter(uid__startswith="ui-bench-").delete()
            NodeRecord.objects.filter(name__startswith="bench-node-").delete()
            if redis_server is not None:
                redis_server.terminate()
                redis_server.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
