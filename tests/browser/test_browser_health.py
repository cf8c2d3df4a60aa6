"""The health banner and the overview's charts, in the browser, against the whole stack.

A stalled scheduler is staged as it happens in a cluster: pods keep arriving and nothing
places them (this stack runs no scheduler). Celery beat samples the health every second
over an 8 s window (see conftest), so the banner rises within seconds; placing the pods
(assumed through the owner as the extender does, then bound through Celery) clears it."""
import re
import threading
import time

import pytest
from playwright.sync_api import expect

from dashboard.clients.owner_client import send
from dashboard.worker.tasks import bind_pod
from tests.live.livestack import cluster_pods, new_pod, pod_rows, state_of
from tests.waiting import wait_for

pytestmark = pytest.mark.timeout(240)
STALL_MS = 60_000   # the window, a sample, the banner's 5 s poll, with room on a busy machine


class Arrivals:
    """Pods arriving one a second while nothing places them: pending grows, which is what
    the health calls a stall (constant pending is not one: pods that fit nowhere wait)."""

    def __init__(self, kube):
        self.kube, self.pods, self.stopped = kube, [], threading.Event()
        self.thread = threading.Thread(target=self._arrive, daemon=True)

    def _arrive(self):
        while not self.stopped.is_set():
            name = f"stalled-{len(self.pods)}"
            self.pods.append((new_pod(self.kube, name), name))
            self.stopped.wait(1.0)   # the pace of arrivals, not a synchronisation

    def stop(self):
        """No more arrivals: the (uid, name) of every pod that arrived."""
        self.stopped.set()
        self.thread.join()
        return list(self.pods)


@pytest.fixture
def arrivals(kube, stack):
    """Pods arriving until stopped; those still pending are deleted afterwards. They start
    once the pages' rows hold no pod the cluster has deleted: an earlier test's pod, deleted
    as it ended, could otherwise be the oldest pending row the banner links to and be gone
    from the pages by the time the link is followed (a 404, as CI once saw)."""
    wait_for(lambda: not set(pod_rows()) - set(cluster_pods(stack)), 30,
             "the pages to drop the pods earlier tests deleted")
    arriving = Arrivals(kube)
    arriving.thread.start()
    yield arriving
    for uid, name in arriving.stop():
        if state_of(uid) == "Pending":
            kube.delete_namespaced_pod(name, "default")


def test_a_stalled_scheduler_raises_the_banner_linking_to_the_pod_until_pods_are_placed(
        page, kube, arrivals):
    page.goto("/nodes/")
    stalled = page.locator('#health-banner li[data-check="scheduling"]')
    expect(stalled).to_be_visible(timeout=STALL_MS)
    expect(stalled).to_contain_text("Stalled: pending grew")
    # The link names a pending pod, or (once the owner has counted the pending pods'
    # reasons, every 30 s) the Pending page filtered by the top reason; either leads to a
    # pending pod's page.
    stalled.locator("a").click()
    page.wait_for_url(re.compile(r"/(pods/[^/]+/|pending/\?reason=.+)$"))
    if "/pending/" in page.url:
        page.locator("#pending-list a[href^='/pods/']").first.click()
        page.wait_for_url("**/pods/*/")
    expect(page.locator("#pod-state")).to_have_attribute("data-state", "Pending")
    # Every page carries the banner.
    expect(page.locator('#health-banner li[data-check="scheduling"]')).to_be_visible()
    # Place the pods, as kube-scheduler's extender would: the banner goes without a reload.
    page.goto("/zones/")
    page.evaluate("window.__sameLoad = true")
    node = kube.list_node().items[0].metadata.name
    for uid, name in arrivals.stop():
        wait_for(lambda uid=uid: state_of(uid) == "Pending", 30, "the owner to see the pod")
        send("assume", {"uid": uid, "node": node}, actor="browser-test", timeout=10)
        bind_pod.delay(uid, "default", name, node)
    expect(page.locator('#health-banner li[data-check="scheduling"]')).to_have_count(
        0, timeout=STALL_MS)
    assert page.evaluate("window.__sameLoad") is True, "the page reloaded"


def test_the_overview_leads_with_health_and_charts_the_samples_with_axes(page):
    page.goto("/")
    expect(page.locator("#counts > section.health-panel")).to_be_visible()
    expect(page.locator('#health li[data-check="owner"]')).to_contain_text("Leading")
    section = page.locator("#over-time")
    expect(section).to_have_attribute("data-loaded", "1h")
    pods = section.locator('figure[data-chart="pods"]')
    # Beat samples every second: the chart holds points, drawn by uPlot on its canvas.
    page.wait_for_function(
        "Number(document.querySelector('figure[data-chart=pods]').dataset.points) >= 2",
        timeout=30_000)
    expect(pods.locator("canvas")).to_have_count(1)
    expect(pods.locator(".u-axis")).to_have_count(2)          # time, and pods
    expect(pods.locator(".u-legend")).to_contain_text("Pending")
    axes = page.evaluate("""() => {
        const plot = document.querySelector('figure[data-chart=pods]')._plot;
        return {labels: plot.axes.map(a => a.label),
                pending: plot.data[1].filter(v => v !== null).length};
    }""")
    assert axes["labels"] == ["time (UTC)", "pods"]    # the viewer's zone: this browser's
    assert axes["pending"] >= 2
    # The time picker: another range is fetched and drawn.
    section.locator('button[data-range="15m"]').click()
    expect(section).to_have_attribute("data-loaded", "15m")
    expect(section.locator('button[data-range="15m"]')).to_have_attribute("aria-pressed",
                                                                          "true")


def test_the_snapshot_chart_is_drawn_with_axes(page, kube):
    # Two changes a second apart: two snapshots at least, so the chart has a line.
    node = kube.list_node().items[0].metadata.name
    for name in ("snapshot-chart-a", "snapshot-chart-b"):
        uid = new_pod(kube, name, node)
        wait_for(lambda uid=uid: state_of(uid) == "Added", 30, "the owner to add the pod")
    page.goto("/snapshot/")
    figure = page.locator("#snapshot-chart")
    page.wait_for_function(
        "Number((document.querySelector('#snapshot-chart') || {dataset: {}}).dataset.points) >= 2",
        timeout=30_000)
    expect(figure.locator(".u-axis")).to_have_count(2)
    expect(figure.locator(".u-legend")).to_contain_text("Snapshot generation")


def test_a_stuck_bind_raises_the_banner_linking_to_the_pod_until_it_binds(page, kube):
    """A pod assumed as the extender does, its bind held back: stuck after
    SCHEDVIEW_BIND_STUCK_AFTER (10 s), until the bind is queued and goes through."""
    uid = new_pod(kube, "stuck-bind")
    wait_for(lambda: state_of(uid) == "Pending", 30, "the owner to see the pod")
    node = kube.list_node().items[0].metadata.name
    send("assume", {"uid": uid, "node": node}, actor="browser-test", timeout=10)
    page.goto("/events/")
    stuck = page.locator('#health-banner li[data-check="binds_stuck"]')
    expect(stuck).to_be_visible(timeout=STALL_MS)
    expect(stuck).to_contain_text("whose bind has not finished")
    expect(stuck.locator("a")).to_have_attribute("href", f"/pods/{uid}/")
    bind_pod.delay(uid, "default", "stuck-bind", node)
    expect(page.locator('#health-banner li[data-check="binds_stuck"]')).to_have_count(
        0, timeout=STALL_MS)


def test_a_point_of_forgets_links_to_the_forgotten_pods_events(page, kube):
    """Issue 24: a burst's number links to the events behind it. A pod assumed then
    forgotten shows as a point on the rates chart; the cursor on that point offers the
    Events page's window of it, which lists the pod."""
    uid = new_pod(kube, "charted-forget")
    wait_for(lambda: state_of(uid) == "Pending", 30, "the owner to see the pod")
    node = kube.list_node().items[0].metadata.name
    before = time.time() - 1   # a sample counts what happened in the period up to its time
    send("assume", {"uid": uid, "node": node}, actor="browser-test", timeout=10)
    send("forget", {"uid": uid}, actor="browser-test", timeout=10)
    page.goto("/")
    # The point of this forget: earlier tests of the run forgot pods too.
    forgets = """since => {
        const plot = (document.querySelector('figure[data-chart=rates]') || {})._plot;
        if (!plot) { return -1; }
        const line = plot.series.findIndex(s => s.label === 'Forgets');
        return plot.data[line].findIndex((v, i) => v > 0 && plot.data[0][i] >= since);
    }"""
    # Beat samples every second; the charts fetch the series every 10 s.
    wait_for(lambda: page.evaluate(forgets, before) >= 0, 40, "a point of forgets on the chart")
    page.evaluate("""i => {
        const plot = document.querySelector('figure[data-chart=rates]')._plot;
        plot.setCursor({left: plot.valToPos(plot.data[0][i], 'x'), top: 10});
    }""", page.evaluate(forgets, before))
    link = page.locator('figure[data-chart="rates"] .chart-events a', has_text="Forgets")
    expect(link).to_have_count(1)
    assert "kind=pod_forgotten" in link.get_attribute("href")
    link.click()
    page.wait_for_url("**/events/?*")
    expect(page.locator(f'#event-rows tr.kind-pod_forgotten a[href="/pods/{uid}/"]')).to_have_count(1)
