"""Tables at cluster scale in a browser: the pods list pages by cursor to the last of
150,000 pods, and the heat map draws 5,000 nodes, links each to its page, and follows the
cache live.

The rows are written straight into the read model the stack's pages read (committed,
outside the tests' transactions, and deleted afterwards), as the owner would have written
them for a cluster that size; the stack's own owner writes only its small cluster's rows
and never touches these (it prunes other owners' rows once, right after its first sync).
"""
import re
import time
from datetime import datetime, timezone

import pytest
from playwright.sync_api import expect

from dashboard.clients.owner_client import send
from tests.browser.browserkit import wait_live
from tests.live.livestack import state_of
from tests.waiting import wait_for

pytestmark = pytest.mark.timeout(600)

PODS = 150_000
NODES = 5_000
NAMESPACE = "bulk"            # the bulk pods' namespace: nothing else is in it
T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def bulk_pods(stack, django_db_blocker):
    from dashboard.models import PodRecord
    with django_db_blocker.unblock():
        for start in range(0, PODS, 10_000):
            PodRecord.objects.bulk_create(
                PodRecord(uid=f"bulk-{i:06}", namespace=NAMESPACE, name=f"job-{i:06}",
                          state="Added", node=f"scale-{i % NODES:04}", zone="zone-s",
                          milli_cpu=250, memory=256 << 20, changed_at=T0)
                for i in range(start, min(PODS, start + 10_000)))
    yield
    with django_db_blocker.unblock():
        PodRecord.objects.filter(namespace=NAMESPACE).delete()


@pytest.fixture(scope="module")
def many_nodes(stack, django_db_blocker):
    from dashboard.models import NodeRecord
    with django_db_blocker.unblock():
        NodeRecord.objects.bulk_create(
            NodeRecord(name=f"scale-{i:04}", zone=f"zone-s{i % 3}", tree_index=i,
                       cpu_percent=float(i % 101), memory_percent=50.0,
                       gpu_percent=None if i % 10 else 75.0, changed_at=T0)
            for i in range(NODES))
    yield
    with django_db_blocker.unblock():
        NodeRecord.objects.filter(name__startswith="scale-").delete()


def test_the_pods_list_pages_by_cursor_to_the_last_of_150000_pods(page, bulk_pods):
    page.goto(f"/pods/?namespace={NAMESPACE}")
    expect(page.locator("#pod-rows h2")).to_have_text("150,000 pods matching")
    expect(page.locator("nav.pager")).to_contain_text("1–50 of 150,000 (page 1 of 3,000)")
    first_row = page.locator("#pod-rows tbody tr th a").first
    expect(first_row).to_have_text("job-000000")
    started = time.monotonic()
    page.click("nav.pager a[rel=last]")
    expect(page.locator("nav.pager")).to_contain_text("149,951–150,000 of 150,000")
    last_page = time.monotonic() - started
    names = page.locator("#pod-rows tbody tr th a")
    expect(names.last).to_have_text("job-149999")
    expect(names).to_have_count(50)
    expect(page.locator("nav.pager span.muted", has_text="Next")).to_be_visible()
    page.click("nav.pager a[rel=prev]")
    expect(page.locator("nav.pager")).to_contain_text("149,901–149,950 of 150,000")
    expect(names.last).to_have_text("job-149949")
    page.click("nav.pager a[rel=next]")
    expect(names.last).to_have_text("job-149999")
    # the address says where the reader is: a reload shows the same page
    page.reload()
    expect(page.locator("#pod-rows tbody tr th a").last).to_have_text("job-149999")
    assert last_page < 5, f"the last page took {last_page:.1f} s"


def test_a_page_number_past_the_last_says_which_is_the_last(page, bulk_pods):
    response = page.goto(f"/pods/?namespace={NAMESPACE}&page=3001")
    assert response.status == 400
    expect(page.locator("p.error")).to_contain_text("page: 3001 is past the last page, 3000")


def test_the_heat_map_draws_5000_nodes_and_links_each(page, many_nodes):
    page.goto("/heatmap/")
    total = page.evaluate("document.querySelectorAll('.heat a').length")
    assert total >= NODES
    cell = page.locator("#heat-scale-0097")
    expect(cell).to_have_class("h-9")                                # 97% of its CPU
    expect(cell).to_have_attribute("title", "scale-0097: 97% of its CPU requested")
    assert page.evaluate("document.documentElement.scrollWidth") <= 1366
    page.click("nav.filters a:has-text('GPUs')")
    expect(page.locator("#heat-scale-0010")).to_have_class("h-7")    # 75% of its GPUs
    expect(page.locator("#heat-scale-0011")).to_have_class("h-none")
    page.click("#heat-scale-0010")
    expect(page.locator("main h1")).to_have_text("Node scale-0010")


def test_the_heat_map_follows_the_cache_live(page, kube, request):
    node = kube.list_node().items[0].metadata.name
    page.goto("/heatmap/")
    wait_live(page)
    cell = page.locator(f"#heat-{node}")
    before = cell.get_attribute("title")
    name = "heat-" + request.node.name[-20:].replace("_", "-")
    pod = kube.create_namespaced_pod("default", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                 "resources": {"requests": {"cpu": "4", "memory": "1Gi"}}}]}})
    uid = pod.metadata.uid
    wait_for(lambda: state_of(uid) == "Pending", 30, "the owner to see the pending pod")
    send("assume", {"uid": uid, "node": node}, actor="browser-test", timeout=10)
    expect(cell).not_to_have_attribute("title", before)
    shown = float(re.search(r": ([\d.]+)% of its CPU", cell.get_attribute("title")).group(1))
    was = float(re.search(r": ([\d.]+)% of its CPU", before).group(1))
    assert shown > was
    send("forget", {"uid": uid}, actor="browser-test", timeout=10)
    kube.delete_namespaced_pod(name, "default")
