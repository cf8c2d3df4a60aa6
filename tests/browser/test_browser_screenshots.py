"""Each view renders in a laptop-sized browser without errors and without scrolling
sideways, detail pages included, also with the longest names Kubernetes allows and a
node with many labels and taints; a full-page screenshot of each is kept (the folder is
printed at the end of the run) for people and CI artifacts."""
from datetime import datetime, timezone

import pytest
from playwright.sync_api import expect

# The stack needs the test database (each test rolls back what it writes here).

VIEWS = {
    "overview": "/",
    "pods": "/pods/",
    "pod-detail": "/pods/{pod}/",
    "nodes": "/nodes/",
    "node-detail": "/nodes/{node}/",
    "zones": "/zones/",
    "snapshot": "/snapshot/",
    "events": "/events/",
    "pools": "/pools/",
    "statuses": "/statuses/",
    "pending": "/pending/",
    "heatmap": "/heatmap/",
    "heatmap-gpu": "/heatmap/?metric=gpu",
    "pods-long-names": "/pods/?namespace={long_namespace}",
    "pod-long-names": "/pods/{long_pod}/",
    "node-long-names": "/nodes/{long_node}/",
    "nodes-long-names": "/nodes/?label={long_label}",
    "events-long-names": "/events/?namespace={long_namespace}",
}
# The longest a Kubernetes name may be: a namespace 63 characters, a pod or node 253.
LONG_NAMESPACE = "n" * 63
LONG_NODE = ".".join(["a" * 63] * 3) + "." + "b" * 61
LONG_POD = "p" * 253
LONG_LABEL = "example.com/" + "k" * 63


@pytest.fixture(scope="module")
def long_names(stack, django_db_blocker):
    """A pod and its node with the longest names, many labels and taints, written into the
    read model and history (committed; deleted afterwards)."""
    from dashboard.models import NodeRecord, PodRecord, Transition
    labels = {f"{LONG_LABEL}-{i}": "v" * 63 for i in range(12)}
    taints = [{"key": f"{LONG_LABEL}-{i}", "value": "v" * 63, "effect": "NoSchedule"}
              for i in range(6)]
    with django_db_blocker.unblock():
        NodeRecord.objects.create(name=LONG_NODE, zone="zone-" + "z" * 60, labels=labels,
                                  taints=taints, cpu_percent=40.0, conditions=[
                                      {"type": "Ready", "status": "True",
                                       "reason": "KubeletReady", "message": "m " * 200}])
        PodRecord.objects.create(uid="long-pod", namespace=LONG_NAMESPACE, name=LONG_POD,
                                 state="Added", node=LONG_NODE, labels=labels)
        # Numbered below the owner's (never taken by it): one far above them made the
        # pruning keep the latest million numbers by deleting the owner's whole history
        # and every checkpoint with it, and the time travel test then found none.
        Transition.objects.create(seq=-1, at=datetime.now(timezone.utc),
                                  kind="pod_added", key="long-pod", namespace=LONG_NAMESPACE,
                                  name=LONG_POD, node=LONG_NODE, from_state="Initial",
                                  to_state="Added", cause="watch")
    yield {"long_namespace": LONG_NAMESPACE, "long_pod": "long-pod", "long_node": LONG_NODE,
           "long_label": f"{LONG_LABEL}-0"}
    with django_db_blocker.unblock():
        PodRecord.objects.filter(uid="long-pod").delete()
        NodeRecord.objects.filter(name=LONG_NODE).delete()
        Transition.objects.filter(key="long-pod").delete()


@pytest.fixture(scope="module")
def bound_pod(kube):
    """A pod of the cluster that runs on a node: (uid, node)."""
    pod = next(p for p in kube.list_pod_for_all_namespaces().items if p.spec.node_name)
    return pod.metadata.uid, pod.spec.node_name


@pytest.mark.parametrize("view", VIEWS)
def test_each_view_renders_fits_the_width_and_is_kept_as_a_screenshot(
        page, bound_pod, long_names, screenshot_dir, view):
    uid, node = bound_pod
    response = page.goto(VIEWS[view].format(pod=uid, node=node, **long_names))
    assert response.status == 200, f"{view} answered {response.status}"
    expect(page.locator("main h1")).not_to_be_empty()
    # Usable on a laptop: the page fits the window's width, nothing scrolls sideways.
    assert page.evaluate("document.documentElement.scrollWidth") <= page.viewport_size["width"]
    page.screenshot(path=screenshot_dir / f"{view}.png", full_page=True)
