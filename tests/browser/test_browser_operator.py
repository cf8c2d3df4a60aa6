"""The operator's view (issue 25), in Chromium at a laptop's 1366 px against the whole stack:

- every live page keeps its two sockets (the header's and its own) while it is pushed to:
  the statuses page opened about 15 a second, its pushed section carrying ws-connect;
- a fault episode of the simulated cluster is announced on the banner as injected, the
  bind-failure figure names its window and is the binds panel's, and both go when the
  episode has ended;
- the pods pager numbers the last page last, and walking back gives the pages' numbers;
- names read whole: node names and zones on the nodes page, the Processes panel, the
  events' words (the longest names Kubernetes allows still wrap, and nothing overflows).
"""
import re
import threading

import orjson
import pytest
from playwright.sync_api import expect

from dashboard.kube.client import read_json
from dashboard.runtime import supervised, weather
from dashboard.wire.clients import redis_client
from tests.browser.browserkit import NOTE_LIVE_SOCKET, TIMEOUT_MS, wait_live
from tests.live.livestack import state_of
from tests.waiting import wait_for

pytestmark = pytest.mark.timeout(300)

LIVE_PAGES = ["/", "/nodes/", "/heatmap/", "/zones/", "/pods/", "/pending/", "/snapshot/",
              "/events/", "/pools/", "/statuses/"]
PUSHES = 30          # statuses changes the pages sit through (about 30 s on a busy machine)
LINES_JS = """el => {
  const range = document.createRange(); range.selectNodeContents(el);
  return new Set([...range.getClientRects()].map(r => Math.round(r.top))).size;
}"""   # how many lines an element's text takes


def waiting_pod(kube, name: str, cpu: str = "99") -> dict:
    """A pending pod (by default one no node fits: 99 cores), once the owner sees it: its
    body as the API server shows it."""
    pod = kube.create_namespaced_pod("default", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                 "resources": {"requests": {"cpu": cpu}}}]}})
    wait_for(lambda: state_of(pod.metadata.uid) == "Pending", 30, f"the owner to see {name}")
    return read_json(kube.read_namespaced_pod(name, "default", _preload_content=False))


def filter_call(stack, pod: dict, nodes: list[str]) -> dict:
    """kube-scheduler's filter call for `pod` (k8s-wire/extender, nodeCacheCapable)."""
    answer = stack.http.request("POST", f"{stack.extender()}/filter",
                                body=orjson.dumps({"Pod": pod, "Nodes": None,
                                                   "NodeNames": nodes}),
                                headers={"Content-Type": "application/json"})
    assert answer.status == 200, answer.data
    return orjson.loads(answer.data)


def test_every_live_page_keeps_two_sockets_while_it_is_pushed_to(browser, stack, kube,
                                                                 signed_in):
    context = browser.new_context(storage_state=signed_in, base_url=stack.web_url,
                                  viewport={"width": 1366, "height": 800})
    context.set_default_timeout(TIMEOUT_MS)
    context.add_init_script(NOTE_LIVE_SOCKET)
    nodes = [node.metadata.name for node in kube.list_node().items]
    a_pod = kube.list_pod_for_all_namespaces(limit=1).items[0].metadata.uid
    pages = LIVE_PAGES + [f"/pods/{a_pod}/", f"/nodes/{nodes[0]}/"]
    sockets, tabs = {}, {}
    for path in pages:
        tab = context.new_page()
        sockets[path] = []
        tab.on("websocket", lambda ws, path=path: sockets[path].append(ws.url))
        tab.goto(path)
        wait_live(tab)
        tabs[path] = tab
    names = [f"ws-count-{i:02}" for i in range(PUSHES)]
    try:
        for name in names:      # each a new Waiting status: the statuses' version moves
            result = filter_call(stack, waiting_pod(kube, name), nodes)
            assert not result["NodeNames"]
        # The statuses page got the pushes (it shows the last pod), on its first socket.
        expect(tabs["/statuses/"].locator("#status-rows")).to_contain_text(names[-1])
        opened = {path: len(urls) for path, urls in sockets.items()}
        assert opened == dict.fromkeys(pages, 2), opened
    finally:
        context.close()
        for name in names:
            kube.delete_namespaced_pod(name, "default", grace_period_seconds=0,
                                       _preload_content=False)


@pytest.fixture
def announced(stack):
    """`manage.py up`'s announcer, reading the stack's simulated cluster into Redis."""
    announcer = weather.Announcer(stack.cluster_url, redis_client(stack.env["REDIS_URL"]),
                                  every=0.5).start()
    yield
    announcer.stop()
    stack.control("weather", {"episodes": []})


def test_an_injected_episode_is_announced_and_its_warning_clears_when_it_ends(
        page, stack, kube, announced):
    """The demo failed a third of binds for good, so its banner never cleared. Now a
    failing-binds episode is announced as injected; the bind-failure figure names its
    window (the stack's 8 s) and is the binds panel's; both go once the episode is over."""
    nodes = [node.metadata.name for node in kube.list_node().items]
    stack.control("weather", {"episodes": ["failing-binds"], "first_in": 0, "length": 20,
                              "calm": 3600})
    stop = threading.Event()

    def bind_pods():
        """kube-scheduler's cycle for a few pods at a time: filter (the extender assumes),
        then bind; the health judges from 10 binds in its window on."""
        batch = 0
        while not stop.is_set():
            names = [f"episode-{batch:03}-{i}" for i in range(6)]
            batch += 1
            bodies = [waiting_pod(kube, name, cpu="1m") for name in names]
            for body in bodies:
                placed = filter_call(stack, body, nodes)["NodeNames"]
                if placed:
                    meta = body["metadata"]
                    stack.http.request("POST", f"{stack.extender()}/bind", body=orjson.dumps({
                        "PodName": meta["name"], "PodNamespace": "default",
                        "PodUID": meta["uid"], "Node": placed[0]}),
                        headers={"Content-Type": "application/json"})
            for name in names:
                kube.delete_namespaced_pod(name, "default", grace_period_seconds=0,
                                           _preload_content=False)
    binder = threading.Thread(target=bind_pods, name="binder", daemon=True)
    binder.start()
    try:
        page.goto("/")
        note = page.locator("#health-banner .injected")
        expect(note).to_contain_text("injecting failing binds until")
        expect(page.locator("#injected .injected")).to_contain_text("30% of Bindings")
        failures = page.locator('#health-banner li[data-check="bind_failures"]')
        expect(failures).to_contain_text("of binds failed in the last 8 s", timeout=60_000)
        # The binds panel shows the same figure over the same window (it moves with each
        # sample, the panel pushed and the banner polled: wait for them to agree).
        wait_for(lambda: _same_figure(page), 30, "the banner and the binds panel to agree")
    finally:
        stop.set()
        binder.join(60)
    # The episode ends (20 s), its window passes: the announcement and the warning go.
    expect(note).to_have_count(0, timeout=60_000)
    expect(failures).to_have_count(0, timeout=60_000)
    expect(page.locator("#injected")).to_contain_text("when failing binds ended")


def _same_figure(page) -> bool:
    banner = page.locator('#health-banner li[data-check="bind_failures"]')
    panel = page.locator("#binds")
    if not banner.count():
        return False
    figure = re.search(r"\(([\d,]+) of ([\d,]+)\)", banner.inner_text())
    return bool(figure) and (f"{figure.group(1)} of {figure.group(2)} bind"
                             in panel.inner_text())


def test_the_pods_pager_numbers_the_last_page_last(page):
    """2,619 pods read "2,570–2,619 of 2,619 (page 52 of 53)" on the last page."""
    page.goto("/pods/")
    total = int(re.search(r"([\d,]+) pods", page.locator("#pod-rows h2").inner_text())
                .group(1).replace(",", ""))
    per_page = next(n for n in range(7, 40) if total % n)    # a last page not full
    pages = -(-total // per_page)
    page.goto(f"/pods/?per_page={per_page}")
    pager = page.locator("nav.pager")
    expect(pager).to_contain_text(f"1–{per_page} of {total:,} (page 1 of {pages})")
    pager.locator('a[rel="last"]').click()
    first = (pages - 1) * per_page + 1
    expect(pager).to_contain_text(f"{first:,}–{total:,} of {total:,} (page {pages} of {pages})")
    assert page.locator("#pod-rows tbody tr").count() == total - (pages - 1) * per_page
    pager.locator('a[rel="prev"]').click()
    expect(pager).to_contain_text(
        f"{first - per_page:,}–{first - 1:,} of {total:,} (page {pages - 1} of {pages})")


LONG = ".".join(["l" * 63] * 3) + "." + "n" * 61          # 253 characters
LONG_ZONE = "z" * 60


@pytest.fixture
def long_node(kube):
    """A node with the longest name, a long zone, a taint and GPUs (the Extended column
    shows), beside the stack's own."""
    resources = {"cpu": "4", "memory": "8Gi", "pods": "20", "nvidia.com/gpu": "8"}
    kube.create_node({"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": LONG, "labels": {"topology.kubernetes.io/zone": LONG_ZONE}},
        "spec": {"taints": [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]},
        "status": {"allocatable": resources, "capacity": resources,
                   "conditions": [{"type": "Ready", "status": "True"}]}})
    yield LONG
    kube.delete_node(LONG)


def test_names_read_whole_at_1366_px(page, stack, long_node, screenshot_dir):
    """At 1366 px the Processes panel broke PIDs and names a character a line ("1113/9",
    "simcluste/r"), node names and zones wrapped on the nodes page, event words split
    mid-word ("pod_forgotte/n")."""
    page.goto("/nodes/")
    expect(page.locator(f'tr[id="node-{LONG}"]')).to_be_visible()
    rows = page.locator("#node-rows tr")
    for i in range(rows.count()):
        row = rows.nth(i)
        name = row.locator('th[scope="row"] a')
        if name.inner_text() != LONG:
            assert name.evaluate(LINES_JS) == 1, name.inner_text()
        assert row.locator("td.zone").evaluate(LINES_JS) == 1
    expect(page.locator("#node-table thead")).to_contain_text("Extended")
    resource = page.locator(f'tr[id="node-{LONG}"] .extended > small')
    assert resource.inner_text() == "nvidia.com/gpu" and resource.evaluate(LINES_JS) == 1
    taint = page.locator(f'tr[id="node-{LONG}"] td.taints code')
    assert "dedicated=infra:NoSchedule" in taint.inner_text().replace("\n", "")
    assert _fits(page)
    page.screenshot(path=screenshot_dir / "nodes-1366.png", full_page=True)

    store = redis_client(stack.env["REDIS_URL"])
    supervised.publish(store, [
        {"name": name, "pid": 1_113_900 + i, "started": 1.7e9, "restarts": i,
         "last_restart": 1.7e9 if i else None, "last_exit": -9 if i else None,
         "probe": f"127.0.0.1:{41000 + i}"}
        for i, name in enumerate(["simcluster", "owner-a", "owner-b", "pools", "worker",
                                  "standin", "beat", "web"])])
    try:
        page.goto("/")
        cells = page.locator("#processes tbody tr:not(.restart) > *")
        expect(cells.first).to_be_visible()
        for i in range(cells.count()):
            # (a live push may be redrawing the panel: 0 lines until it is drawn again)
            lines = wait_for(lambda i=i: cells.nth(i).evaluate(LINES_JS), 10, "the cell drawn")
            assert lines == 1, cells.nth(i).inner_text()
        assert _fits(page)
    finally:
        supervised.clear(store)

    page.goto("/events/")
    kinds = page.locator("#event-rows .kind")
    expect(kinds.first).to_be_visible()
    for i in range(min(kinds.count(), 40)):
        assert kinds.nth(i).evaluate(LINES_JS) == 1, kinds.nth(i).inner_text()
    assert _fits(page)


def _fits(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth") <= 1366


def test_moments_read_in_the_viewers_local_time_with_the_zone_named(browser, stack, kube,
                                                                     signed_in):
    """Three time formats (UTC, the browser's clock, ISO): now one, the viewer's local
    time with its zone named, UTC on hover, on pages and in the charts alike."""
    context = browser.new_context(storage_state=signed_in, base_url=stack.web_url,
                                  timezone_id="Asia/Tokyo")
    context.set_default_timeout(TIMEOUT_MS)
    try:
        page = context.new_page()
        uid = kube.list_pod_for_all_namespaces(limit=1).items[0].metadata.uid
        page.goto(f"/pods/{uid}/")
        moment = page.locator("table.timeline time").first
        expect(moment).to_contain_text("GMT+9")
        assert moment.get_attribute("title").endswith(" UTC")
        assert moment.get_attribute("data-moment") is None      # rewritten
        # The events page too, to the millisecond: "12:04:05.123 GMT+9".
        page.goto("/events/")
        moment = page.locator("#event-rows time").first
        expect(moment).to_have_text(re.compile(r"\d\d:\d\d:\d\d\.\d{3} GMT\+9$"))
        assert moment.get_attribute("title").endswith(" UTC")
        page.goto("/")
        page.wait_for_function("() => document.querySelector('figure[data-chart=pods]')?._plot")
        label = page.evaluate(
            "document.querySelector('figure[data-chart=pods]')._plot.axes[0].label")
        assert label == "time (GMT+9)"
    finally:
        context.close()
