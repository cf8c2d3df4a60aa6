"""The whole stack at a size and a churn (issue 26): what the first sync costs against the
raw list, how long until the read model is complete, each process's memory, the pages'
latency, the feed's lag, lease handovers and the database's size, in one table.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/h_me REDIS_URL=redis://127.0.0.1:6379/N \
    .venv/bin/python bench/scale_bench.py [--nodes 500] [--pods 15000] [--churn 200]
                                          [--steady 60] [--requests 30] [--timeout 1800]
                                          [--complete-within 600] [--keep-log FILE]

It runs `manage.py up` (simulated cluster, two owners, pools, worker, beat, stand-in, web)
on the database and Redis of the environment, each emptied first (the database's tables
flushed, Redis's schedview keys cleared), with its files, web port and extender port of
its own. It samples the owner's status and the lease every half second. At the first
synced status it takes each process's RSS (the supervisor's children, each with its own
children: the owner with its decoder, the worker with its pool); once the read model has
caught up it lists every node and pod of the simulated cluster itself, a page of 500 at a
time, parsing each (the raw list-and-parse the sync is compared with: same objects, same
run); then, for `--steady` seconds under churn, it logs in as a user it creates and asks
each page `--requests` times, one request after another, while the sampler reads the
feed's lag. The RSS is taken again at the end (steady), and the database's size.
Everything it started is stopped (SIGTERM to `up`, which stops its children; whatever is
left after 30 s is killed), however the run ends.
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

import orjson
import psutil
import urllib3

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

import django  # noqa: E402

django.setup()

from benchkit import ROOT, line, percentile, spawn  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from dashboard import accounts  # noqa: E402
from dashboard.management.commands.up import cluster_url, free_port  # noqa: E402
from dashboard.readmodel.read_model import owner_status  # noqa: E402
from dashboard.runtime.supervised import processes  # noqa: E402
from dashboard.wire.clients import redis_client  # noqa: E402
from tests.live.livestack import clear_redis  # noqa: E402

PAGES = ("/", "/nodes/", "/zones/", "/snapshot/", "/heatmap/")
RAW_PAGE = 500
BENCH_USER = "scale-bench"
# dashboard/owner/runner.py's log lines as the leader starts listing and once it is synced
OWNER_LOG = re.compile(r"^(\S+ \S+) dashboard\.owner\.runner (owning the cache|synced:)", re.M)
STANDIN_LOG = re.compile(r"^(\S+ \S+) dashboard\.standin\.runner period: (.*)$", re.M)


def mib(nbytes) -> str:
    return f"{nbytes / 2**20:,.0f} MiB"


class Up:
    """`manage.py up` in a session of its own, its output in `log`; stop() ends it and
    every process it started, whatever state they are in."""

    def __init__(self, args, var_dir: Path):
        self.var_dir = var_dir
        self.port = free_port()
        env = dict(os.environ, SCHEDVIEW_VAR_DIR=str(var_dir),
                   SCHEDVIEW_EXTENDER_ADDRESS=f"127.0.0.1:{free_port()}")
        env.pop("SCHEDVIEW_KUBECONFIG", None)         # up's own simulated cluster
        self.log = var_dir / "up.log"
        self.started = time.time()
        self.process = spawn(
            [sys.executable, "manage.py", "up", "--port", str(self.port), "--nodes",
             str(args.nodes), "--pods", str(args.pods), "--churn", str(args.churn)],
            cwd=ROOT, env=env, stdout=self.log.open("wb"), stderr=subprocess.STDOUT,
            start_new_session=True)
        self.url = f"http://127.0.0.1:{self.port}"

    def descendants(self) -> list[psutil.Process]:
        try:
            return psutil.Process(self.process.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []

    def stop(self):
        survivors = self.descendants()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        _, alive = psutil.wait_procs(survivors, timeout=10)
        for process in alive:
            try:
                process.kill()
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(alive, timeout=10)

    def alive(self):
        if self.process.poll() is not None:
            tail = self.log.read_text(errors="replace")[-2000:]
            raise SystemExit(f"manage.py up exited with {self.process.returncode}:\n{tail}")


def rss_by_child(redis) -> dict:
    """Each supervised child's RSS, its own children's added, and of that its children's
    (name -> (bytes, of which its children's bytes): the owner's decoder, the worker's pool)."""
    sizes = {}
    for child in processes(redis).children:
        try:
            root = psutil.Process(child.pid)
            own = root.memory_info().rss
            children = sum(p.memory_info().rss for p in root.children(True))
        except psutil.NoSuchProcess:
            continue
        sizes[child.name] = (own + children, children)
    return sizes


class Sampler(threading.Thread):
    """Reads the owner's status and the lease's holder every half second."""

    def __init__(self, redis):
        super().__init__(daemon=True)
        self.redis, self.stop = redis, threading.Event()
        self.holders, self.lags, self.status = [], [], {}
        self.synced_at = self.complete_at = None
        self.sync_rss = {}

    def run(self):
        while not self.stop.wait(0.5):
            status = owner_status()
            counters = status.counters if status.live else {}
            if counters:      # the last live one: a loaded owner's status may read stale
                self.status = counters
            holder = processes(self.redis).leader
            if holder and (not self.holders or self.holders[-1] != holder):
                self.holders.append(holder)
            if counters.get("synced") and self.synced_at is None:
                self.synced_at = time.time()
                self.sync_rss = rss_by_child(self.redis)
            if self.synced_at is not None:
                self.lags.append((time.time(), counters.get("feed_lag") or 0.0))
            if (self.synced_at is not None and self.complete_at is None
                    and counters.get("feed_backlog") == 0
                    and counters.get("read_model_backlog") == 0):
                self.complete_at = time.time()

    def handovers(self) -> int:
        return max(0, len(self.holders) - 1)


def logged_sync(log: Path) -> tuple[float, float] | None:
    """(seconds from the synced owner's "owning the cache" to its "synced:", when that was:
    epoch seconds), by the log's timestamps (the last start of listing before the first
    sync: an owner that lost the lease before it synced listed in vain); None if no owner
    logged it: "synced:" waits for the feed to drain too, which under churn faster than
    the owner applies never happens, while the status's `synced` says only that the lists
    are in."""
    began = None
    for stamp, what in OWNER_LOG.findall(log.read_text(errors="replace")):
        at = datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp()
        if what == "synced:" and began is not None:
            return at - began, at
        began = at if what != "synced:" else began
    return None


def standin_pace(log: Path, since: float, until: float) -> tuple[float, float]:
    """The stand-in's binds and attempts a minute between two epoch times, summed from its
    `period:` lines: how fast pending pods are placed (issue 26's pile)."""
    binds = attempts = 0
    for stamp, counts in STANDIN_LOG.findall(log.read_text(errors="replace")):
        if since <= datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp() < until:
            for kind, count in re.findall(r"(\w+) (\d+)", counts):
                binds += int(count) if kind == "bind" else 0
                attempts += int(count) if kind != "victims" else 0
    minutes = max(1e-9, (until - since) / 60)
    return binds / minutes, attempts / minutes


def api_version(server: str) -> tuple[float, int]:
    """(now, the simulated cluster's resourceVersion): every change it makes moves it by
    one, so its growth over a while is the watch events a second the churn makes."""
    state = orjson.loads(urllib3.request("GET", server + "/simcluster/v1/state").data)
    return time.monotonic(), int(state["resourceVersion"])


def events_per_second(began: tuple[float, int], ended: tuple[float, int]) -> float:
    return (ended[1] - began[1]) / max(1e-9, ended[0] - began[0])


DRIFT_LOG = re.compile(r"the cache drifted from the cluster \(.*?\); (.*)")


def drift_healed(log: Path) -> tuple[int, int]:
    """How many comparisons found drift and had it fetched again, and how many relisted."""
    fetched = relisted = 0
    for how in DRIFT_LOG.findall(log.read_text(errors="replace")):
        relisted += "relisting" in how
        fetched += "relisting" not in how
    return fetched, relisted


def owner_started(redis, holder: str) -> float:
    """When the leading owner's process started (epoch seconds)."""
    for child in processes(redis).children:
        if child.name == holder:
            return psutil.Process(child.pid).create_time()
    raise SystemExit(f"no supervised child is the leader {holder!r}")


def raw_list_and_parse(server: str) -> tuple[float, int, int]:
    """Seconds to list every node and pod a page at a time and parse each page, how many
    objects, and how many continue tokens expired on the way: the work the owner's first
    sync cannot do without. An expired token's 410 offers a token for the remainder, listed
    inconsistently (capture 99b): a timing needs no consistency, so the list goes on with
    it (600,000 pods under churn outlast the 5 minutes of history a token lives)."""
    http = urllib3.PoolManager()
    began, count, expired = time.perf_counter(), 0, 0
    for path in ("/api/v1/nodes", "/api/v1/pods"):
        token = ""
        while True:
            fields = {"limit": RAW_PAGE, **({"continue": token} if token else {})}
            response = http.request("GET", server + path, fields=fields)
            page = orjson.loads(response.data) if response.status in (200, 410) else {}
            if response.status == 410 and page.get("metadata", {}).get("continue"):
                expired += 1
                token = page["metadata"]["continue"]
                continue
            if response.status != 200:
                raise SystemExit(f"{path}: {response.status} {response.data[:200]!r}")
            count += len(page["items"])
            token = page["metadata"].get("continue", "")
            if not token:
                break
    return time.perf_counter() - began, count, expired


def logged_in(base: str) -> urllib3.PoolManager:
    """A session of a user made here (viewer role), logged in through the login form."""
    get_user_model().objects.filter(username=BENCH_USER).delete()
    _, password = accounts.create_user(BENCH_USER)
    http = urllib3.PoolManager()
    form = http.request("GET", base + "/accounts/login/")
    cookies = dict(c.split(";")[0].split("=", 1) for c in form.headers.getlist("Set-Cookie"))
    token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', form.data).group(1)
    answer = http.request_encode_body(
        "POST", base + "/accounts/login/", encode_multipart=False, redirect=False,
        fields={"username": BENCH_USER, "password": password,
                "csrfmiddlewaretoken": token.decode()},
        headers={"Referer": base + "/accounts/login/",
                 "Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items())})
    if answer.status != 302:
        raise SystemExit(f"the login answered {answer.status}")
    for cookie in answer.headers.getlist("Set-Cookie"):
        name, value = cookie.split(";")[0].split("=", 1)
        cookies[name] = value
    http.headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in cookies.items())
    return http


def page_times(base: str, requests: int) -> dict:
    """Each page's request times in seconds, asked one after another."""
    http, times = logged_in(base), {path: [] for path in PAGES}
    for _ in range(requests):
        for path in PAGES:
            began = time.perf_counter()
            response = http.request("GET", base + path, redirect=False)
            if response.status != 200:
                raise SystemExit(f"{path} answered {response.status}")
            times[path].append(time.perf_counter() - began)
    return times


def database_size() -> dict:
    """The database's bytes, and each of the largest tables' bytes per row (PostgreSQL);
    the file's bytes with SQLite."""
    if connection.vendor != "postgresql":
        return {"database": Path(connection.settings_dict["NAME"]).stat().st_size}
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_database_size(current_database())")
        sizes = {"database": cursor.fetchone()[0]}
        cursor.execute("SHOW autovacuum")
        sizes["autovacuum"] = cursor.fetchone()[0]
        for table in ("dashboard_noderecord", "dashboard_podrecord"):
            cursor.execute(f"SELECT pg_total_relation_size('{table}'), count(*), "
                           f"coalesce(avg(pg_column_size(t.*)), 0) FROM {table} t")
            total, rows, live = cursor.fetchone()
            cursor.execute("SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = %s",
                           [table])
            sizes[table] = (total, rows, live, cursor.fetchone()[0])
    return sizes


def wait(condition, timeout: float, what: str, up: Up):
    deadline = time.monotonic() + timeout
    while not condition():
        up.alive()
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.5)


def measure(args, up: Up, redis) -> None:
    sampler = Sampler(redis)
    sampler.start()
    try:
        kubeconfig = up.var_dir / "simcluster.kubeconfig"
        wait(kubeconfig.exists, args.timeout, "the simulated cluster", up)
        server = cluster_url(kubeconfig)
        wait(lambda: sampler.synced_at is not None, args.timeout, "the owner's sync", up)
        # A read model that does not catch up is a figure too: the run goes on without it.
        try:
            wait(lambda: sampler.complete_at is not None, args.complete_within,
                 "the read model", up)
        except SystemExit:
            up.alive()      # `up` gone is the run's end, a read model behind is not
        raw_seconds, listed, expired = raw_list_and_parse(server)
        steady_began, steady_wall = time.monotonic(), time.time()
        version_began = api_version(server)
        times = page_times(up.url, args.requests)
        wait(lambda: time.monotonic() - steady_began >= args.steady, args.steady + 60,
             "the steady window", up)
        churn_rate = events_per_second(version_began, api_version(server))
        drained = logged_sync(up.log)      # read last: a slow owner drains late
        pace = standin_pace(up.log, steady_wall, time.time())
        steady_rss = rss_by_child(redis)
        status = sampler.status
        holder = sampler.holders[-1]      # the leader at the end
        started_to_sync = sampler.synced_at - owner_started(redis, holder)
    finally:
        sampler.stop.set()
        sampler.join()
    sizes = database_size()
    load = os.getloadavg()
    print(f"scale: {args.nodes:,} nodes, {args.pods:,} pods, churn {args.churn:g} actions/s; "
          f"{status.get('pods', 0):,} pods cached and {status.get('pending', 0):,} pending "
          f"at the end; load average "
          f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1/5/15 min), {psutil.cpu_count()} cores")
    line("the API server's changes a second under that churn (steady window)",
         f"{churn_rate:,.0f}")
    line(f"raw list-and-parse of {listed:,} objects ({RAW_PAGE} a page"
         + (f"; {expired} continue tokens expired, the remainder listed from the 410's"
            if expired else "") + ")", f"{raw_seconds:.1f} s")
    sync_seconds, drained_at = drained or (None, None)
    if sync_seconds is None:
        line("owner's sync (owning the cache to synced)",
             f"never: the lists were in, the feed never drained (backlog "
             f"{status.get('feed_backlog')}, lag {status.get('feed_lag')} s at the end)")
    else:
        line("owner's sync (owning the cache to synced)", f"{sync_seconds:.1f} s")
        line("sync / raw list-and-parse", f"{sync_seconds / raw_seconds:.2f}")
    line("owner's process start to its lists in (imports, lease)", f"{started_to_sync:.1f} s")
    if sampler.complete_at is None:
        line(f"read model complete, within {args.complete_within:g} s of the sync",
             f"no ({status.get('read_model_backlog')} changes unwritten at the end)")
    else:
        line("read model complete, after up's start", f"{sampler.complete_at - up.started:.1f} s")
        line("read model complete, after the sync",
             f"{sampler.complete_at - sampler.synced_at:.1f} s")
    for name in sorted(set(sampler.sync_rss) | set(steady_rss)):
        at_sync, steady = sampler.sync_rss.get(name, (0, 0)), steady_rss.get(name, (0, 0))
        line(f"RSS {name}: at sync / steady (of which its children's)",
             f"{mib(at_sync[0])} / {mib(steady[0])} ({mib(at_sync[1])} / {mib(steady[1])})")
    cached = max(1, status.get("pods", 0))
    line(f"RSS {holder} (the leader, its decoder included) per cached pod, steady",
         f"{steady_rss.get(holder, (0, 0))[0] / cached:,.0f} B")
    for path, samples in times.items():
        line(f"page {path}: p50 / p99 of {len(samples)}",
             f"{percentile(samples, 0.5) * 1000:.0f} / {percentile(samples, 0.99) * 1000:.0f} ms")
    # From the lists in (the status's `synced`) to the feed drained the sync's own backlog
    # is applied: its lag is the sync's, apart from the lag under churn after it.
    draining = [lag for at, lag in sampler.lags if drained_at is None or at < drained_at]
    lags = [lag for at, lag in sampler.lags if drained_at is not None and at >= drained_at]
    line("feed lag from the lists in to the drained sync: max",
         f"{max(draining, default=0.0):.2f} s")
    lags = lags or [0.0]
    line("feed lag after the drained sync: p50 / p99 / max",
         f"{percentile(lags, 0.5):.2f} / {percentile(lags, 0.99):.2f} / {max(lags):.2f} s")
    line("the stand-in's binds / attempts a minute (steady window)",
         f"{pace[0]:,.0f} / {pace[1]:,.0f}")
    fetched, relisted = drift_healed(up.log)
    line("comparisons that found drift: fetched again / relisted", f"{fetched} / {relisted}")
    line("lease handovers (leaders: " + " -> ".join(sampler.holders) + ")",
         sampler.handovers())
    line("database size" + (f" (autovacuum {sizes['autovacuum']})" if "autovacuum" in sizes
                             else ""), mib(sizes["database"]))
    for table in ("dashboard_noderecord", "dashboard_podrecord"):
        if table in sizes:
            total, rows, live, dead = sizes[table]
            line(f"{table}: {rows:,} rows; a row with indexes and dead versions / live",
                 f"{total / max(1, rows):,.0f} / {live:,.0f} B ({dead:,} dead versions)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=15000)
    parser.add_argument("--churn", type=float, default=200.0)
    parser.add_argument("--steady", type=float, default=60.0,
                        help="seconds under churn after the read model is complete")
    parser.add_argument("--requests", type=int, default=30, help="requests of each page")
    parser.add_argument("--timeout", type=float, default=1800.0,
                        help="seconds allowed for the owner's sync")
    parser.add_argument("--complete-within", type=float, default=600.0,
                        help="seconds after the sync the read model may take to catch up "
                             "(past them the run goes on, saying so)")
    parser.add_argument("--keep-log", type=Path, default=None,
                        help="copy the stack's log (up's and its children's) here at the end")
    args = parser.parse_args()
    if not (os.environ.get("DATABASE_URL") and os.environ.get("REDIS_URL")):
        parser.error("DATABASE_URL and REDIS_URL name the database and Redis the stack runs on")
    signal.signal(signal.SIGTERM, signal.default_int_handler)   # a kill still stops `up`
    call_command("migrate", interactive=False, verbosity=0)
    call_command("flush", interactive=False, verbosity=0)
    clear_redis()
    redis = redis_client(settings.REDIS_URL)
    with tempfile.TemporaryDirectory(prefix="scale-bench-") as tmp:
        up = Up(args, Path(tmp))
        try:
            measure(args, up, redis)
        finally:
            # A second Ctrl-C (or `timeout` passing its signal on) must not cut the stop
            # short: that left `up` and its children running.
            for sig in (signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, signal.SIG_IGN)
            up.stop()
            if args.keep_log is not None:
                shutil.copyfile(up.log, args.keep_log)


if __name__ == "__main__":
    main()
