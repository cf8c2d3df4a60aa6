"""The Pending page and a pending pod's diagnosis are live: a pod created while the page is
open joins the list, and a node that would take a waiting pod shows in its diagnosis,
without a reload (the pages' sockets nudge, the fragments ask for themselves again)."""
import pytest
from playwright.sync_api import expect

from dashboard.models import PodRecord, PodState
from tests.browser.browserkit import wait_live
from tests.live.livestack import state_of
from tests.waiting import wait_for

pytestmark = pytest.mark.timeout(180)

GPU = "nvidia.com/gpu"
NOT_RELOADED = "() => window.__notReloaded === true"


def gpu_pod(name: str, gpus: int) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "app", "image": "registry.example/app:1",
                                     "resources": {"requests": {"cpu": "1", GPU: str(gpus)},
                                                   "limits": {GPU: str(gpus)}}}]}}


def test_the_pending_page_lists_a_new_pending_pod_without_a_reload(page, stack, kube):
    page.goto("/pending/")
    wait_live(page)
    page.evaluate("() => { window.__notReloaded = true; }")
    expect(page.locator("#pending-list")).not_to_contain_text("live-wants-64-gpus")
    kube.create_namespaced_pod("default", gpu_pod("live-wants-64-gpus", 64))
    try:
        row = page.locator("#pending-list tr", has_text="live-wants-64-gpus")
        expect(row).to_have_count(1)
        expect(row.locator("td.reason")).not_to_be_empty()
        assert page.evaluate(NOT_RELOADED), "the page was reloaded"
    finally:
        kube.delete_namespaced_pod("live-wants-64-gpus", "default", grace_period_seconds=0,
                                   _preload_content=False)


def test_a_node_that_would_take_the_pod_shows_in_its_diagnosis_without_a_reload(page, stack, kube):
    pod = kube.create_namespaced_pod("default", gpu_pod("live-wants-80-gpus", 80))
    node = "live-gpu-node-80"
    created = False
    try:
        wait_for(lambda: state_of(pod.metadata.uid) == "Pending", 30,
                 "the owner to see the pending pod")
        wait_for(lambda: PodRecord.objects.filter(uid=pod.metadata.uid,
                                                  state=PodState.PENDING).exists(), 30,
                 "the pending pod's row, which the page draws")
        page.goto(f"/pods/{pod.metadata.uid}/")
        wait_live(page)
        page.evaluate("() => { window.__notReloaded = true; }")
        expect(page.locator("#pod-diagnosis .diagnosis-summary")).to_contain_text(
            f"Insufficient {GPU}")
        kube.create_node({"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": node, "labels": {"topology.kubernetes.io/zone": "zone-gpu"}},
            "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "20",
                                       GPU: "80"},
                       "capacity": {"cpu": "16", "memory": "64Gi", "pods": "20", GPU: "80"}}})
        created = True
        # No stand-in places it on the browser stack: it waits, fitting the new node.
        expect(page.locator("#pod-diagnosis")).to_contain_text("Nodes that take it now")
        expect(page.locator("#pod-diagnosis")).to_contain_text(node)
        assert page.evaluate(NOT_RELOADED), "the page was reloaded"
    finally:
        kube.delete_namespaced_pod("live-wants-80-gpus", "default", grace_period_seconds=0,
                                   _preload_content=False)
        if created:
            kube.delete_node(node)
