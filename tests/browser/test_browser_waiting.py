"""A pod the extender refuses everywhere: its Waiting status, with a reason per node,
fits a laptop's window on the statuses list and on the pod's own status page.

Staged as kube-scheduler drives an extender configured with `managedResources:
[{name: example.com/gpu, ignoredByScheduler: true}]` (shared k8s-wire/extender, capture
08-managed-resources, exchange 04): its own filters ignore the GPU, so every node
passes them and `filter` is called with all of them; the extender finds no node with 9
free GPUs and refuses each one. Here the nodes are hundreds, with the longest names
Kubernetes allows (253 characters).
"""
import orjson
import pytest
from playwright.sync_api import expect

from dashboard.kube.client import read_json
from tests.live.livestack import owner_status, state_of, wait_for


NODES = 300
GPU = "example.com/gpu"
POD = "train-needs-9-gpus"
WIDTH = 1366
REASON = f"Insufficient {GPU}"


def long_node_name(i: int) -> str:
    """253 characters, a valid DNS subdomain, distinct per i."""
    return ".".join(["w" * 63] * 3) + "." + f"node-{i:04d}".rjust(61, "n")


@pytest.fixture(scope="module")
def refused_everywhere(stack, kube):
    """The pod's (namespace, name) once the extender's filter refused it on every node."""
    names = [long_node_name(i) for i in range(NODES)]
    nodes_before = owner_status()["nodes"]
    for name in names:
        kube.create_node({"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": name, "labels": {"topology.kubernetes.io/zone": "zone-long"}},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "20"},
                       "capacity": {"cpu": "4", "memory": "8Gi", "pods": "20"}}})
    requests = {"cpu": "500m", "memory": "256Mi", GPU: "9"}
    pod = kube.create_namespaced_pod("default", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": POD},
        "spec": {"containers": [{"name": "app", "image": "registry.example/app:1",
                                 "resources": {"requests": requests,
                                               "limits": {GPU: "9"}}}]}})
    try:
        wait_for(lambda: owner_status()["nodes"] >= nodes_before + NODES and state_of(pod.metadata.uid)
                 == "Pending", 60, "the owner to see the nodes and the pod")
        body = read_json(kube.read_namespaced_pod(POD, "default", _preload_content=False))
        answer = stack.http.request(
            "POST", f"{stack.extender()}/filter",
            body=orjson.dumps({"Pod": body, "Nodes": None, "NodeNames": names}),
            headers={"Content-Type": "application/json"})
        assert answer.status == 200, answer.data
        result = orjson.loads(answer.data)
        assert not result["NodeNames"] and not result["Error"]
        assert result["FailedNodes"] == dict.fromkeys(names, REASON)
        yield "default", POD
    finally:
        kube.delete_namespaced_pod(POD, "default", grace_period_seconds=0)
        for name in names:
            kube.delete_node(name)


def fits_the_window(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth") <= WIDTH


def test_the_statuses_list_shows_the_waiting_pod_without_scrolling_sideways(
        page, refused_everywhere, screenshot_dir):
    namespace, name = refused_everywhere
    page.goto("/statuses/?state=Waiting")
    row = page.locator("table.statuses tbody tr", has_text=name)
    # The reasons read as one line per reason with its count, not a line per node.
    expect(row.locator("td.reasons")).to_have_text(f"{NODES} nodes: {REASON}")
    page.screenshot(path=screenshot_dir / "statuses-waiting.png", full_page=True)
    assert fits_the_window(page)


def test_the_waiting_pods_status_page_wraps_its_node_lists(
        page, refused_everywhere, screenshot_dir):
    namespace, name = refused_everywhere
    page.goto(f"/statuses/{namespace}/{name}/")
    expect(page.locator(".state")).to_have_text("Waiting")
    group = page.locator("table.reasons tbody tr")
    expect(group).to_have_count(1)
    expect(group.locator("td").nth(0)).to_have_text(REASON)
    expect(group.locator("td").nth(1)).to_have_text(f"{NODES}")
    reason = group.locator("td.reason")
    # Readable: the reason is not squeezed to a word a line beside the node names.
    assert reason.bounding_box()["height"] < 3 * _line_height(reason)
    # The nodes wait behind a count; opened, the first are listed (links), the rest counted.
    nodes = group.locator("details.reason-nodes")
    expect(nodes.locator("summary")).to_have_text(f"The first 50 of {NODES} nodes")
    expect(nodes.locator("li").first).not_to_be_visible()
    page.screenshot(path=screenshot_dir / "status-waiting.png", full_page=True)
    assert fits_the_window(page)
    nodes.locator("summary").click()
    expect(nodes.locator("li a")).to_have_count(50)
    expect(nodes.locator("li a").first).to_have_text(long_node_name(0))
    expect(nodes).to_contain_text(f"and {NODES - 50} more")
    page.screenshot(path=screenshot_dir / "status-waiting-open.png", full_page=True)
    assert fits_the_window(page)
    box = nodes.bounding_box()
    assert box["x"] + box["width"] <= WIDTH


def _line_height(locator) -> float:
    return locator.evaluate("e => parseFloat(getComputedStyle(e).lineHeight) || "
                            "1.2 * parseFloat(getComputedStyle(e).fontSize)")
