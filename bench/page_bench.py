"""The pages at 20,000 nodes and 600,000 pods, without the stack: the overview, nodes,
zones, snapshot and heat map, each timed through Django's test client (issue 26).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/pages20k \\
    REDIS_URL=redis://127.0.0.1:6379/0 \\
        .venv/bin/python bench/page_bench.py [--nodes 20000] [--pods 600000]
            [--requests 30] [--pages overview,nodes] [--profile heatmap] [--refill]

DATABASE_URL must name a PostgreSQL database of its own (made when missing): it is
migrated, then, unless it already holds `--nodes` node rows (or `--refill`), emptied of
the read model and filled by COPY as the owner writes it: NodeRecord (5 zones, labels,
taints, conditions, resources), PodRecord (mostly Added, some Pending, Assumed, Expired,
Forgotten), the last hour's transitions, 300 snapshot samples and a day of health samples,
then VACUUM ANALYZE (beat's `vacuum` runs where autovacuum is off). No owner writes its
status: the pages render as with none live. Each page is fetched `--requests` times (after
one warm-up) as a logged-in operator in this process, under the web's collector settings
(`dashboard/asgi.py`); p50/p99 are printed per page.
`--profile PAGE` then prints cProfile's top functions of 10 fetches of that page.
Figures are printed, nothing is asserted.
"""
import argparse
import cProfile
import io
import os
import pstats
import random
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchkit import line, percentile  # noqa: E402

PAGES = {"overview": "/", "nodes": "/nodes/", "zones": "/zones/", "snapshot": "/snapshot/",
         "heatmap": "/heatmap/"}
ZONES = 5
NAMESPACES = 50
EPOCH = 1
STATES = (("Added", 955), ("Pending", 20), ("Assumed", 15), ("Expired", 5), ("Forgotten", 5))


def arguments():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=20000)
    parser.add_argument("--pods", type=int, default=600000)
    parser.add_argument("--requests", type=int, default=30, help="timed fetches per page")
    parser.add_argument("--pages", default=",".join(PAGES), help="which pages, by name")
    parser.add_argument("--profile", choices=PAGES, help="profile 10 fetches of this page")
    parser.add_argument("--refill", action="store_true", help="fill again even when full")
    return parser.parse_args()


def configure():
    """Django on DATABASE_URL's PostgreSQL database, made and migrated when missing."""
    import psycopg
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith("postgres"):
        raise SystemExit("DATABASE_URL must name a PostgreSQL database (e.g. .../pages20k)")
    server, name = url.rsplit("/", 1)
    with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
        if not admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            admin.execute(f'CREATE DATABASE "{name}"')
    os.environ.setdefault("DEBUG", "0")
    os.environ.setdefault("SECRET_KEY", "page-bench")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    import django
    django.setup()
    from django.core.management import call_command
    call_command("migrate", verbosity=0)


# --- the read model ---------------------------------------------------------------------------
def _copy(cursor, table: str, columns: list[str], rows):
    with cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


def _json(value) -> str:
    import orjson
    return orjson.dumps(value).decode()


def node_rows(count: int, pods_on: list[int], now: datetime):
    """NodeRecord's columns as the owner writes them (rows.py, row_details.py); zones
    interleaved in the tree's order, one node in eight with GPUs, one in twenty tainted."""
    rng = random.Random(5)
    for i in range(count):
        zone = f"region-1/zone-{i % ZONES}"
        gpus = 8 if i % 8 == 0 else 0
        alloc = {"milli_cpu": 32000, "memory": 128 << 30, "ephemeral_storage": 500 << 30,
                 "allowed_pod_number": 110, "scalar_resources": {"nvidia.com/gpu": gpus}
                 if gpus else {}}
        cpu, mem = rng.randrange(0, 32000, 250), rng.randrange(0, 128 << 30, 1 << 28)
        used_gpus = rng.randrange(gpus + 1) if gpus else 0
        requested = {"milli_cpu": cpu, "memory": mem, "ephemeral_storage": 0,
                     "allowed_pod_number": 0,
                     "scalar_resources": {"nvidia.com/gpu": used_gpus} if gpus else {}}
        non_zero = dict(requested, milli_cpu=cpu + 100, memory=mem + (200 << 20))
        name = f"node-{i:05d}"
        labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                  "kubernetes.io/arch": "amd64", "topology.kubernetes.io/region": "region-1",
                  "topology.kubernetes.io/zone": f"zone-{i % ZONES}",
                  "node.kubernetes.io/instance-type": "m5.8xlarge", "pool": f"pool-{i % 7}"}
        taints = ([{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
                  if i % 20 == 0 else [])
        conditions = [{"type": kind, "status": "False", "reason": f"No{kind}",
                       "lastTransitionTime": "2026-11-01T00:00:00Z"}
                      for kind in ("MemoryPressure", "DiskPressure", "PIDPressure")]
        conditions.append({"type": "Ready", "status": "True", "reason": "KubeletReady",
                           "message": "kubelet is posting ready status",
                           "lastTransitionTime": "2026-11-01T00:00:00Z"})
        yield (name, zone, i, True, 1000 + i * 30, pods_on[i], _json(requested),
               _json(non_zero), _json(alloc), _json([["0.0.0.0", "TCP", 9100]]), 25,
               _json(labels), _json(taints), _json(conditions), False,
               round(100 * cpu / 32000, 1), round(100 * mem / (128 << 30), 1),
               round(100 * used_gpus / gpus, 1) if gpus else None,
               now - timedelta(seconds=rng.uniform(0, 3600)), EPOCH)


def pod_rows(count: int, nodes: int, now: datetime, pods_on: list[int]):
    rng = random.Random(4)
    states = [state for state, _ in STATES]
    weights = [weight for _, weight in STATES]
    for i in range(count):
        state = rng.choices(states, weights)[0]
        index = rng.randrange(nodes)
        node = "" if state == "Pending" else f"node-{index:05d}"
        if state in ("Added", "Assumed"):
            pods_on[index] += 1
        assumed = state == "Assumed"
        app = f"app-{rng.randrange(500):03d}"
        yield (f"{i:08x}-5f0c-4e1b-9a7d-{rng.getrandbits(48):012x}",
               f"ns-{rng.randrange(NAMESPACES):02d}", f"{app}-{i:07d}", node,
               node and f"region-1/zone-{index % ZONES}", state,
               assumed and rng.random() < 0.5, now - timedelta(seconds=5) if assumed else None,
               now.timestamp() + 30 if assumed else None,
               "Pending" if state == "Pending" else "Running", str(100000 + i),
               _json({"app": app, "pod-template-hash": f"{rng.getrandbits(32):08x}"}),
               rng.choice((100, 250, 500, 1000)), rng.choice((1, 2, 4)) << 28, "{}",
               rng.choice((0, 0, 0, 1000)), 500000 + i,
               now - timedelta(seconds=rng.uniform(0, 3600)), EPOCH)


KINDS = (("pod_added", 40), ("pod_assumed", 20), ("pod_binding_finished", 15),
         ("pod_confirmed", 15), ("pod_expired", 2), ("pod_forgotten", 3), ("node_updated", 5))


def transition_rows(count: int, nodes: int, now: datetime):
    rng = random.Random(6)
    kinds = [kind for kind, _ in KINDS]
    weights = [weight for _, weight in KINDS]
    for i in range(count):
        kind = rng.choices(kinds, weights)[0]
        node = f"node-{rng.randrange(nodes):05d}"
        pod = kind.startswith("pod_")
        yield (1_000_000 + i, now - timedelta(seconds=3600 * (count - i) / count), kind,
               f"uid-{i:07d}" if pod else node, "ns-00" if pod else "",
               f"pod-{i:07d}" if pod else "", node,
               "Assumed" if kind in ("pod_confirmed", "pod_expired", "pod_forgotten") else "",
               {"pod_added": "Added", "pod_assumed": "Assumed"}.get(kind, ""),
               "bind" if kind == "pod_forgotten" else "watch", "",
               "409 Conflict" if kind == "pod_forgotten" else "", 0, None)


def fill(nodes: int, pods: int):
    from django.db import connection, transaction

    from dashboard.models import (
        ComparerRun,
        HealthSample,
        NodeRecord,
        PodRecord,
        SnapshotSample,
        Transition,
    )
    now = datetime.now(timezone.utc)
    models = (PodRecord, NodeRecord, Transition, SnapshotSample, HealthSample, ComparerRun)
    started = time.perf_counter()
    pods_on = [0] * nodes
    with transaction.atomic(), connection.cursor() as wrapped:
        cursor = wrapped.cursor
        cursor.execute("TRUNCATE " + ", ".join(m._meta.db_table for m in models))
        _copy(cursor, PodRecord._meta.db_table,
              ["uid", "namespace", "name", "node", "zone", "state", "binding_finished",
               "assumed_at", "deadline", "phase", "resource_version", "labels", "milli_cpu",
               "memory", "scalar_resources", "priority", "seq", "changed_at", "owner_epoch"],
              pod_rows(pods, nodes, now, pods_on))
        _copy(cursor, NodeRecord._meta.db_table,
              ["name", "zone", "tree_index", "has_node", "generation", "pods", "requested",
               "non_zero_requested", "allocatable", "host_ports", "images", "labels", "taints",
               "conditions", "unschedulable", "cpu_percent", "memory_percent", "gpu_percent",
               "changed_at", "owner_epoch"], node_rows(nodes, pods_on, now))
        _copy(cursor, Transition._meta.db_table,
              ["seq", "at", "kind", "key", "namespace", "name", "node", "from_state",
               "to_state", "cause", "actor", "detail", "generation", "replay"],
              transition_rows(5000, nodes, now))
    # The newest snapshot lags the newest node generations: some nodes wait for the next.
    top = 1000 + (nodes - 1) * 30
    SnapshotSample.objects.bulk_create(
        SnapshotSample(at=now - timedelta(seconds=300 - s), generation=top - 3000 + 10 * s,
                       cache_generation=top - 2990 + 10 * s,
                       changed_nodes=[f"node-{(s * 37 + k) % nodes:05d}" for k in range(500)])
        for s in range(300))
    HealthSample.objects.bulk_create(
        (HealthSample(at=now - timedelta(seconds=10 * s), period=10.0, level="ok",
                      pending=pods // 50, assumed=pods // 70, added=pods - pods // 30,
                      assumes=40, binds=38, bind_failures=s % 3, expiries=0, forgets=s % 3,
                      feed_backlog=0, feed_lag=0.05, read_model_backlog=0, binds_stuck=0,
                      seq=2_000_000 - s * 50, counted_from=now - timedelta(seconds=10 * s + 10))
         for s in range(8640)), batch_size=2000)
    ComparerRun.objects.create(clean=True, report={"unconfirmed_assumed": ["a", "b"]})
    line(f"{pods:,} pods, {nodes:,} nodes, 5,000 transitions, samples written",
         f"{time.perf_counter() - started:.1f} s")
    started = time.perf_counter()
    with connection.cursor() as cursor:
        for model in models:
            cursor.execute(f"VACUUM ANALYZE {model._meta.db_table}")
    line("VACUUM ANALYZE", f"{time.perf_counter() - started:.1f} s")


# --- the pages --------------------------------------------------------------------------------
def operator_client():
    from django.contrib.auth import get_user_model
    from django.test import Client

    from dashboard.accounts import OPERATOR, set_role
    user, _ = get_user_model().objects.get_or_create(username="page-bench")
    set_role(user, OPERATOR)
    client = Client(SERVER_NAME="127.0.0.1")   # one of the default ALLOWED_HOSTS
    client.force_login(user)
    return client


def fetch(client, path: str) -> int:
    response = client.get(path)
    if response.status_code != 200:
        raise SystemExit(f"{path}: {response.status_code} {response.content[:300]!r}")
    return len(response.content)


def time_pages(client, pages, requests: int):
    for name in pages:
        path = PAGES[name]
        size = fetch(client, path)      # warms the connection, templates and caches
        timings = []
        for _ in range(requests):
            started = time.perf_counter()
            fetch(client, path)
            timings.append(time.perf_counter() - started)
        line(f"GET {path} ({name}, {size / 1024:,.0f} KiB): p50 / p99",
             f"{percentile(timings, 0.5) * 1000:>7.1f} / "
             f"{percentile(timings, 0.99) * 1000:>7.1f} ms")


def profile(client, name: str):
    """cProfile's top functions over 10 fetches of the page, then its statements by time."""
    from django.db import connection
    statements = {}

    def timed(execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            spent = statements.setdefault(sql, [0, 0.0])
            spent[0] += 1
            spent[1] += time.perf_counter() - started

    profiler = cProfile.Profile()
    profiler.enable()
    with connection.execute_wrapper(timed):
        for _ in range(10):
            fetch(client, PAGES[name])
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(40)
    print(out.getvalue())
    for sql, (count, spent) in sorted(statements.items(), key=lambda s: -s[1][1])[:12]:
        print(f"{spent * 100:8.1f} ms / fetch  x{count / 10:g}  {sql[:300]}")


def main() -> int:
    args = arguments()
    configure()
    from dashboard.models import NodeRecord, PodRecord
    if args.refill or NodeRecord.objects.count() != args.nodes:
        fill(args.nodes, args.pods)
    print(f"# {NodeRecord.objects.count():,} nodes, {PodRecord.objects.count():,} pods, "
          f"load average {os.getloadavg()[0]:.1f}")
    client = operator_client()
    import dashboard.asgi  # noqa: F401  the web's collector settings, as daphne loads them
    time_pages(client, [p for p in args.pages.split(",") if p], args.requests)
    if args.profile:
        profile(client, args.profile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
