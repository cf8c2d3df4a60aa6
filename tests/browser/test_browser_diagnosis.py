"""A pending pod's page says why it waits, first: a job asking for 64 GPUs (as the demo's
`demo-train-64-gpus`) on the browser stack's small simulated cluster, where no node has
them. The summary is kube-scheduler's message, the nodes are grouped by reason with links,
and the page fits a laptop's window."""
import re

import pytest
from playwright.sync_api import expect

from dashboard.models import PodRecord, PodState
from tests.live.livestack import owner_status, state_of
from tests.waiting import wait_for

pytestmark = pytest.mark.timeout(180)

GPU = "nvidia.com/gpu"


@pytest.fixture
def gpu_job(kube):
    pod = kube.create_namespaced_pod("default", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "train-64-gpus"},
        "spec": {"containers": [{"name": "app", "image": "registry.example/app:1",
                                 "resources": {"requests": {"cpu": "1", GPU: "64"},
                                               "limits": {GPU: "64"}}}]}})
    try:
        wait_for(lambda: state_of(pod.metadata.uid) == "Pending", 30,
                 "the owner to see the pending pod")
        # The page draws the read model's row, which the owner's writer flushes a moment
        # after its cache has the pod.
        wait_for(lambda: PodRecord.objects.filter(uid=pod.metadata.uid,
                                                  state=PodState.PENDING).exists(), 30,
                 "the pending pod's row")
        yield pod.metadata.uid
    finally:
        kube.delete_namespaced_pod("train-64-gpus", "default")


def test_the_gpu_jobs_page_says_why_it_waits(page, gpu_job):
    nodes = owner_status()["nodes"]
    page.goto(f"/pods/{gpu_job}/")
    summary = page.locator("#pod-diagnosis .diagnosis-summary")
    expect(summary).to_contain_text(f"0/{nodes} nodes are available:")
    expect(summary).to_contain_text(f"Insufficient {GPU}")
    group = page.locator("#pod-diagnosis .diagnosis-groups tbody tr",
                         has=page.locator("th", has_text=f"Insufficient {GPU}"))
    expect(group).to_have_count(1)
    group.locator("a").first.click()
    expect(page).to_have_url(re.compile(r"/nodes/[^/]+/$"))
    page.go_back()
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 1366, f"the page is {width} px wide"
