"""The live dashboard's figures: transition-to-browser delay, websocket viewers one
web process serves, and REST latency of the pod list.

    .venv/bin/python bench/ui_bench.py [--churn 1000] [--viewers 25,50,100,200]
                                       [--rest-pods 150000] [--heat-nodes 5000]
                                       [--parts browser,viewers,scale,rest]

Real processes, started as the live tests start them (tests/live/livestack.py), as
`manage.py up` runs them: the simulated cluster (churning `--churn`
actions a second, its weights chosen so that nearly every action is a cache event, and
no deletes, so watched pods stay), the cache owner (`manage.py watch`) and one web
process (daphne), on REDIS_URL's Redis (else an embedded one) and DATABASE_URL's
database (else a fresh SQLite file), migrated here.

1. browser: headless Chromium (Playwright) logs in and opens the pages of `--tabs`
   pending pods. The bench assumes and forgets them in turn through the owner's commands;
   each transition's time is the event's `at` in the history; a MutationObserver in each
   page records performance.timeOrigin + now() when `#pod-state` shows the new state.
2. viewers: N plain websocket clients (aiohttp, a session cookie) on those pods' sockets,
   for each N in `--viewers`; the same transitions, the same delay per viewer and pod,
   and how many never arrived before the pod's next transition.
3. scale: while the cluster churns, `--rest-pods` read-model pods and `--heat-nodes`
   node rows are inserted beside the cluster's own (stamped with the running owner's
   epoch, so it keeps them), then over HTTP as a logged-in browser: the pods page's last
   page (by cursor, all pods and one state), the heat map at every node, and a websocket
   viewer of the heat map (pushes a second, their size); p50/p99 of each.
4. rest: `--rest-pods` read-model rows inserted directly (after the owner stopped, so it
   does not prune them), then GET /api/v1/pods with filters, sorts and pages (the last
   page by cursor among them) over HTTP with a bearer token, one keep-alive connection;
   the rows are deleted afterwards.
Figures are printed, nothing is asserted.
"""
import argparse
import asyncio
import os
import random
import re
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(ROOT / "tests" / "live"))
from benchkit import core_api, line, percentile, start_redis  # noqa: E402

CHROMIUM = os.environ.get("SCHEDVIEW_CHROMIUM", "/usr/bin/chromium")
NAMESPACE = "ui-bench"
USER = ("ui-bench", "ui-bench-password-1")
# Nearly every action a cache event (binds add, labels and restarts update bound pods);
# no deletes, so the watched pods stay; creates only to feed the binds.
CHURN_WEIGHTS = {"create": 1, "bind": 1, "delete": 0, "label": 3, "status": 3}
STATE_OF_KIND = {"pod_assumed": "Assumed", "pod_forgotten": "Forgotten"}

# Installed before any page script, stamping with the browser's wall clock in ms: when the
# page's socket opened, each pushed fragment htmx swapped in, and (a MutationObserver) each
# change of the state #pod-state shows.
OBSERVER_JS = """
window.__pushes = [];
window.__changes = [];
const now = () => performance.timeOrigin + performance.now();
const shown = () => document.querySelector("#pod-state")?.dataset.state;
document.addEventListener("htmx:wsOpen", () => { window.__wsOpen = true; });
document.addEventListener("htmx:wsAfterMessage", () => { window.__pushes.push([now(), shown()]); });
document.addEventListener("DOMContentLoaded", () => {
  let last = shown();
  new MutationObserver(() => {
    const state = shown();
    if (state !== last) {
      window.__changes.push([now(), state]);
      last = state;
    }
  }).observe(document.body, {subtree: true, childList: true, attributes: true});
});
"""
POD_STATE_TAG = re.compile(r'<[^>]*\bid="pod-state"[^>]*>')
DATA_STATE = re.compile(r'\bdata-state="([^"]*)"')


# --- the stack -------------------------------------------------------------------------------
def configure(tmp: Path):
    """This process and its children on one Redis and one migrated database."""
    url, redis_server = start_redis(tmp)
    os.environ["REDIS_URL"] = url
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{tmp / 'ui-bench.sqlite3'}")
    os.environ["SCHEDVIEW_VAR_DIR"] = str(tmp)
    os.environ["SCHEDVIEW_KUBECONFIG"] = str(tmp / "kubeconfig")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    # Playwright's sync API keeps an event loop running in this thread, where the ORM calls
    # here are still plain blocking calls.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    import django
    django.setup()
    from django.core.management import call_command
    call_command("migrate", verbosity=0)
    return redis_server


def stop(process):
    process.terminate()
    process.wait(timeout=30)


def bench_user():
    """The bench's user (it may act on pods), its session cookie and an API token."""
    from django.contrib.auth.models import Permission, User
    from django.test import Client

    from dashboard.models import ApiToken
    user, _ = User.objects.get_or_create(username=USER[0])
    user.set_password(USER[1])
    user.save()
    user.user_permissions.add(Permission.objects.get(content_type__app_label="dashboard",
                                                     codename="act_on_pods"))
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value, ApiToken.issue(user, "ui-bench")[1]


def owner_answers() -> bool:
    from tests.live.livestack import owner_status
    try:
        return bool(owner_status(timeout=2))
    except Exception:
        return False


def event_rate(seconds=5.0):
    """Cache events a second the owner applies now (its sequence number over `seconds`)."""
    from tests.live.livestack import owner_status
    first, started = owner_status()["seq"], time.monotonic()
    time.sleep(seconds)  # a measuring window, not a synchronisation
    return (owner_status()["seq"] - first) / (time.monotonic() - started)


# --- transitions and their delays ------------------------------------------------------------
def watched_pods(kube, count):
    """`count` pending pods of the bench's own namespace, seen by the owner: their uids."""
    uids = []
    for i in range(count):
        pod = kube.create_namespaced_pod(NAMESPACE, {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"watched-{i}"},
            "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"requests": {"cpu": "1m"}}}]}})
        uids.append(pod.metadata.uid)
    from tests.live.livestack import state_of, wait_for
    wait_for(lambda: all(state_of(u) == "Pending" for u in uids), 60,
             "the owner to see the watched pods")
    return uids


def drive(uids, node, count, period):
    """Assume each watched pod on `node`, then forget it, round robin, one command every
    `period` seconds, `count` in all, then forget those left assumed; returns the sequence
    number before the first and how many transitions were asked for."""
    from dashboard.clients.owner_client import send
    from dashboard.wire.commands import CommandError
    from tests.live.livestack import owner_status
    first_seq = owner_status()["seq"]
    assumed, done, failed = set(), 0, []
    next_at = time.monotonic()
    for i in range(count + len(uids)):
        uid = uids[i % len(uids)]
        if i >= count and uid not in assumed:
            continue      # the last round only forgets: every pod pending for the next part
        try:
            if uid in assumed:
                send("forget", {"uid": uid}, actor="ui-bench", timeout=10)
                assumed.discard(uid)
            else:
                send("assume", {"uid": uid, "node": node}, actor="ui-bench", timeout=10)
                assumed.add(uid)
            done += 1
        except CommandError as error:   # the owner or Redis overloaded: say so, go on
            failed.append(error)
            if len(failed) >= 3 and not owner_answers():
                raise SystemExit(f"the owner stopped answering ({error}): see its log")
        next_at += period
        time.sleep(max(0.0, next_at - time.monotonic()))  # pacing the load, not waiting
    if failed:
        line("commands that failed (then the transition did not happen)",
             f"{len(failed)}, e.g. {failed[0]}")
    return first_seq, done


def transitions_since(seq, expected, uids):
    """{uid: [(state, epoch seconds)]} of the watched pods' assume/forget transitions after
    `seq`, from the history (once the owner's writer has stored all `expected`)."""
    from dashboard.models import Transition
    from tests.live.livestack import wait_for
    rows = Transition.objects.filter(seq__gt=seq, key__in=uids, kind__in=STATE_OF_KIND)
    wait_for(lambda: rows.count() >= expected, 60, "the history of the transitions")
    out = {uid: [] for uid in uids}
    for key, kind, at in rows.order_by("seq").values_list("key", "kind", "at"):
        out[key].append((STATE_OF_KIND[kind], at.timestamp()))
    return out


class Delays:
    """Per transition of a watched pod, against one watcher: the delay to the first fragment
    pushed after it (whatever it shows: the pipeline's speed), and to the first time the
    watcher showed the new state; missed when that never came before the pod's next
    transition (it came late, or a fragment showed an older state and nothing followed).
    `pushes` and `changes` are (epoch seconds, state) lists; changes default to pushes."""

    def __init__(self):
        self.pushed, self.shown, self.missed = [], [], 0

    def add(self, transitions, pushes, changes=None):
        for i, (state, at) in enumerate(transitions):
            until = transitions[i + 1][1] if i + 1 < len(transitions) else float("inf")
            first = next((t for t, _ in pushes if at - 0.05 <= t < until), None)
            if first is not None:
                self.pushed.append(max(0.0, first - at))
            shown = next((t for t, s in (pushes if changes is None else changes)
                          if s == state and at - 0.05 <= t < until), None)
            if shown is None:
                self.missed += 1
            else:
                self.shown.append(max(0.0, shown - at))

    def report(self, label):
        for what, delays in (("first fragment after", self.pushed),
                             ("fragment showing it", self.shown)):
            if delays:
                line(f"{label}, {what}: p50 / p99", f"{percentile(delays, 0.5) * 1000:>6.0f} / "
                                                    f"{percentile(delays, 0.99) * 1000:>6.0f} ms")
        total = len(self.shown) + self.missed
        line(f"{label}: transitions shown / missed", f"{len(self.shown)} / {self.missed} "
             f"({100 * self.missed / max(total, 1):.1f}% missed)")


# --- 1. a browser ----------------------------------------------------------------------------
def bench_browser(web, uids, node, count, period):
    from playwright.sync_api import sync_playwright
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        context = browser.new_context(base_url=web)
        context.add_init_script(OBSERVER_JS)
        login = context.new_page()
        login.goto("/accounts/login/")
        login.fill("form.login input[name=username]", USER[0])
        login.fill("form.login input[name=password]", USER[1])
        login.click("form.login button[type=submit]")
        login.wait_for_url(f"{web}/")
        login.close()
        pages = {}
        for uid in uids:
            pages[uid] = context.new_page()
            pages[uid].goto(f"/pods/{uid}/")
        for page in pages.values():
            page.wait_for_function("window.__wsOpen === true", timeout=30_000)
        transitions = transitions_since(*drive(uids, node, count, period), uids)
        # What arrives after the last transition still counts: give it the pod's period.
        time.sleep(period * len(uids))  # a measuring window, not a synchronisation
        delays = Delays()
        for uid, page in pages.items():
            pushes, changes = page.evaluate("[window.__pushes, window.__changes]")
            delays.add(transitions[uid], [(t / 1000, s) for t, s in pushes],
                       [(t / 1000, s) for t, s in changes])
        browser.close()
    delays.report(f"{len(uids)} pages")


# --- 2. plain websocket viewers ---------------------------------------------------------------
async def viewer(session, url, headers, seen, opened, failures):
    """One websocket client: notes when each fragment came, and the state it shows (and
    why it could not connect, or was dropped)."""
    import aiohttp
    try:
        async with session.ws_connect(url, headers=headers, heartbeat=None) as ws:
            opened.append(time.time())
            async for msg in ws:
                if msg.type != aiohttp.WSMsgType.TEXT:
                    break
                tag = POD_STATE_TAG.search(msg.data)
                state = tag and DATA_STATE.search(tag.group(0))
                seen.append((time.time(), state and state.group(1)))
    except (aiohttp.ClientError, asyncio.TimeoutError) as error:
        failures.append(f"{type(error).__name__}: {error}"[:100])


async def bench_viewers_at(web, cookie, uids, node, viewers, count, period):
    import aiohttp
    ws_base = web.replace("http://", "ws://")
    headers = {"Origin": web, "Cookie": f"sessionid={cookie}"}
    seen = [[] for _ in range(viewers)]
    opened, failures = [], []
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        started = time.monotonic()
        tasks = [asyncio.ensure_future(viewer(session, f"{ws_base}/ws/pods/{uids[i % len(uids)]}/",
                                              headers, seen[i], opened, failures))
                 for i in range(viewers)]
        while len(opened) < viewers and time.monotonic() - started < 60 and not all(
                t.done() for t in tasks):
            await asyncio.sleep(0.05)   # polling a counter this loop's tasks advance
        connect_seconds = time.monotonic() - started
        sent = await asyncio.to_thread(drive, uids, node, count, period)
        transitions = await asyncio.to_thread(transitions_since, *sent, uids)
        await asyncio.sleep(period * len(uids))   # late arrivals still count
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    delays = Delays()
    for i in range(viewers):
        delays.add(transitions[uids[i % len(uids)]], seen[i])
    line(f"{viewers} viewers: connected / seconds to connect all",
         f"{len(opened)} / {connect_seconds:.1f} s")
    if failures:
        common = max(set(failures), key=failures.count)
        line(f"{viewers} viewers: refused or dropped", f"{len(failures)}, e.g. {common}")
    delays.report(f"{viewers} viewers")


# --- 3. scale ---------------------------------------------------------------------------------
def fill_nodes(count, epoch):
    """`count` NodeRecords beside the cluster's, with spread use of CPU, memory and GPUs."""
    from dashboard.models import NodeRecord
    rng = random.Random(5)
    NodeRecord.objects.bulk_create(
        (NodeRecord(name=f"bench-node-{i:04d}", zone=f"zone-{i % 5}", tree_index=100_000 + i,
                    cpu_percent=round(rng.uniform(0, 100), 1),
                    memory_percent=round(rng.uniform(0, 100), 1),
                    gpu_percent=round(rng.uniform(0, 100), 1) if i % 8 == 0 else None,
                    owner_epoch=epoch) for i in range(count)), batch_size=2000)


def timed_gets(http, paths, headers, rounds) -> list[float]:
    timings = []
    for i in range(rounds + len(paths)):
        path = paths[i % len(paths)]
        started = time.perf_counter()
        response = http.request("GET", path, headers=headers)
        elapsed = time.perf_counter() - started
        if response.status != 200:
            raise SystemExit(f"{path}: {response.status} {response.data[:300]!r}")
        if i >= len(paths):     # the first round warms connections and caches
            timings.append(elapsed)
    return timings


async def heat_map_pushes(web, cookie, seconds):
    """(pushes, bytes) one heat map viewer got over `seconds`."""
    import aiohttp
    sizes = []
    headers = {"Origin": web, "Cookie": f"sessionid={cookie}"}
    async with aiohttp.ClientSession() as session:
        async with session.ws_connect(web.replace("http://", "ws://") + "/ws/heatmap/",
                                      headers=headers, heartbeat=None) as ws:
            deadline = time.monotonic() + seconds
            while (left := deadline - time.monotonic()) > 0:
                try:
                    msg = await ws.receive(timeout=left)
                except asyncio.TimeoutError:
                    break
                if msg.type == aiohttp.WSMsgType.TEXT:
                    sizes.append(len(msg.data))
    return sizes[1:]    # the first is the push on connect (the whole map)


def bench_scale(web, cookie, pods, nodes, requests):
    import urllib3

    from dashboard.models import NodeRecord, PodRecord
    epoch = PodRecord.objects.order_by("-owner_epoch").values_list(
        "owner_epoch", flat=True).first() or 0
    started = time.perf_counter()
    fill_read_model(pods, epoch)
    fill_nodes(nodes, epoch)
    line(f"{pods:,} pods and {nodes:,} nodes inserted", f"{time.perf_counter() - started:>6.1f} s")
    http = urllib3.HTTPConnectionPool("127.0.0.1", int(web.rsplit(":", 1)[1]), maxsize=1)
    headers = {"Cookie": f"sessionid={cookie}"}
    try:
        total, last = PodRecord.objects.count(), last_cursor()
        for label, paths in [
                (f"pods page, last page of all {total:,} pods (cursor)", [f"/pods/?cursor={last}"]),
                ("pods page, last page of one state (cursor)",
                 [f"/pods/?state=Added&cursor={last}"]),
                (f"heat map, {NodeRecord.objects.count():,} nodes, CPU",
                 ["/heatmap/?metric=cpu"]),
                ("heat map, GPUs", ["/heatmap/?metric=gpu"])]:
            timings = timed_gets(http, paths, headers, requests)
            line(f"GET {label}: p50 / p99",
                 f"{percentile(timings, 0.5) * 1000:>6.1f} / "
                 f"{percentile(timings, 0.99) * 1000:>6.1f} ms")
        sizes = asyncio.run(heat_map_pushes(web, cookie, 20.0))
        line("heat map viewer: pushes a second, KB a push (median)",
             f"{len(sizes) / 20:.1f}, {statistics.median(sizes) / 1024 if sizes else 0:.1f}")
    finally:
        PodRecord.objects.filter(uid__startswith="ui-bench-").delete()
        NodeRecord.objects.filter(name__startswith="bench-node-").delete()


# --- 4. REST ---------------------------------------------------------------------------------
def fill_read_model(count, epoch=0):
    """`count` PodRecords spread over namespaces, nodes, zones and states, stamped with the
    owner `epoch` (a running owner keeps its own epoch's rows)."""
    from django.db import connection

    from dashboard.models import PodRecord, PodState
    rng = random.Random(4)
    states = [s for s, _ in PodState.choices]
    batch = []
    for i in range(count):
        state = rng.choices(states, [5, 10, 80, 2, 3])[0]
        node = "" if state == "Pending" else f"bench-node-{rng.randrange(1000):04d}"
        batch.append(PodRecord(
            uid=f"ui-bench-{i:07d}", namespace=f"bench-ns-{rng.randrange(50):02d}",
            name=f"bench-pod-{i:07d}", node=node, zone=node and f"zone-{int(node[-4:]) % 5}",
            state=state, binding_finished=state == "Assumed" and rng.random() < 0.5,
            milli_cpu=rng.choice((100, 250, 500, 1000)), memory=rng.choice((1, 2, 4)) << 28,
            priority=rng.choice((0, 0, 0, 1000)), owner_epoch=epoch))
        if len(batch) == 5000:
            PodRecord.objects.bulk_create(batch)
            batch = []
    PodRecord.objects.bulk_create(batch)
    with connection.cursor() as cursor:   # planner statistics, as a long-lived table has
        cursor.execute(f"ANALYZE {PodRecord._meta.db_table}")


# {last}: the last page's cursor in the default sort (see last_cursor)
REST_QUERIES = [
    "cursor={last}",
    "state=Added&cursor={last}",
    "state=Added&page={page}",
    "state=Assumed&sort=-changed&page={page}",
    "namespace=bench-ns-{n:02d}&page={page}",
    "namespace=bench-ns-{n:02d}&state=Added&sort=-priority",
    "node=bench-node-{node:04d}",
    "zone=zone-{zone}&state=Added&page={page}",
    "q=pod-00{n:02d}&page=1",
]


def last_cursor() -> str:
    """The cursor of the last page in the default sort, as the pages' Last link has it."""
    from dashboard.web.pods.query import encode_cursor
    return encode_cursor("before", "name", None)


def bench_rest(web, token, count, requests):
    import urllib3

    from dashboard.models import PodRecord
    started = time.perf_counter()
    fill_read_model(count)
    line(f"{count:,} read-model pods inserted", f"{time.perf_counter() - started:>6.1f} s")
    http = urllib3.HTTPConnectionPool("127.0.0.1", int(web.rsplit(":", 1)[1]), maxsize=1)
    headers = {"Authorization": f"Bearer {token}"}
    rng = random.Random(7)
    timings, failures = {q: [] for q in REST_QUERIES}, 0
    try:
        for i in range(requests + len(REST_QUERIES)):
            query = REST_QUERIES[i % len(REST_QUERIES)]
            path = "/api/v1/pods?" + query.format(page=rng.randint(1, 20), n=rng.randrange(50),
                                                  last=last_cursor(),
                                                  node=rng.randrange(1000), zone=rng.randrange(5))
            t = time.perf_counter()
            response = http.request("GET", path, headers=headers)
            elapsed = time.perf_counter() - t
            if response.status != 200:
                failures += 1
                print(f"  {path}: {response.status} {response.data[:200]!r}")
            elif i >= len(REST_QUERIES):   # the first round warms connections and caches
                timings[query].append(elapsed)
    finally:
        PodRecord.objects.filter(uid__startswith="ui-bench-").delete()
    every = [t for ts in timings.values() for t in ts]
    for query, ts in timings.items():
        if ts:
            line(f"  {query.split('&page')[0][:48]}", f"p50 {statistics.median(ts) * 1000:>6.1f}"
                                                       f", max {max(ts) * 1000:>6.1f} ms")
    if every:
        line(f"GET /api/v1/pods, {len(every)} requests: p50 / p99",
             f"{percentile(every, 0.5) * 1000:>6.1f} / {percentile(every, 0.99) * 1000:>6.1f} ms")
    line("non-200 answers", failures)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--pods", type=int, default=5000, help="cluster pods at start")
    parser.add_argument("--churn", type=float, default=1000, help="cluster actions a second")
    parser.add_argument("--tabs", type=int, default=10, help="watched pods (browser pages)")
    parser.add_argument("--transitions", type=int, default=200,
                        help="assume/forget transitions per measurement")
    parser.add_argument("--period", type=float, default=0.2,
                        help="seconds between transitions (each pod's: this times --tabs)")
    parser.add_argument("--viewers", default="25,50,100,200")
    parser.add_argument("--rest-pods", type=int, default=150_000)
    parser.add_argument("--rest-requests", type=int, default=350)
    parser.add_argument("--heat-nodes", type=int, default=5000)
    parser.add_argument("--scale-requests", type=int, default=100,
                        help="requests per page in the scale part")
    parser.add_argument("--parts", default="browser,viewers,scale,rest")
    args = parser.parse_args(argv)
    parts = set(args.parts.split(","))

    tmp = Path(tempfile.mkdtemp(prefix="ui-bench-"))
    with ExitStack() as cleanup:
        redis_server = configure(tmp)
        if redis_server:
            cleanup.callback(stop, redis_server)
        from tests.live.livestack import Stack, clear_redis, synced_owner
        clear_redis()
        cookie, token = bench_user()
        stack = Stack(tmp, os.environ.copy())
        cleanup.callback(stack.stop_all)
        web = stack.web()
        print(f"ui bench: logs and database in {tmp}; database "
              f"{os.environ['DATABASE_URL'].split('@')[-1]}")
        if parts & {"browser", "viewers", "scale"}:
            kubeconfig = Path(os.environ["SCHEDVIEW_KUBECONFIG"])
            stack.cluster(kubeconfig, "--nodes", str(args.nodes), "--pods", str(args.pods),
                          "--zones", "5")
            stack.owner("owner")
            synced_owner(timeout=300)
            kube = core_api(kubeconfig)
            kube.create_namespace({"metadata": {"name": NAMESPACE}})
            uids = watched_pods(kube, args.tabs)
            node = kube.list_node(limit=1).items[0].metadata.name
            stack.control("churn", {"rate": args.churn, "scheduler": True,
                                    "weights": CHURN_WEIGHTS})
            print(f"cluster churning {args.churn:.0f} actions/s: "
                  f"{event_rate():.0f} cache events/s applied by the owner")
            if "browser" in parts:
                print("transition -> updated fragment in a connected browser")
                bench_browser(web, uids, node, args.transitions, args.period)
            if "viewers" in parts:
                print("concurrent websocket viewers of one web process (pod pages)")
                for viewers in map(int, args.viewers.split(",")):
                    asyncio.run(bench_viewers_at(web, cookie, uids, node, viewers,
                                                 args.transitions, args.period))
            if "scale" in parts:
                print("pods page and heat map at scale, under churn")
                bench_scale(web, cookie, args.rest_pods, args.heat_nodes, args.scale_requests)
            print(f"  still churning at {event_rate():.0f} cache events/s")
            stack.stop("owner")   # before the REST rows go in: it prunes rows not its own
        if "rest" in parts:
            print(f"REST: filtered, paginated pod list at {args.rest_pods:,} pods")
            bench_rest(web, token, args.rest_pods, args.rest_requests)
    return 0


if __name__ == "__main__":
    sys.exit(main())
