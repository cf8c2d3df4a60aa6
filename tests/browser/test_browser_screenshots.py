"""Each main view renders in a laptop-sized browser without errors; a full-page screenshot
of each is kept (the folder is printed at the end of the run) for people and CI artifacts."""
import pytest
from playwright.sync_api import expect

# The stack needs the test database (each test rolls back what it writes here).
pytestmark = pytest.mark.django_db

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
}


@pytest.fixture(scope="module")
def bound_pod(kube):
    """A pod of the cluster that runs on a node: (uid, node)."""
    pod = next(p for p in kube.list_pod_for_all_namespaces().items if p.spec.node_name)
    return pod.metadata.uid, pod.spec.node_name


@pytest.mark.parametrize("view", VIEWS)
def test_each_main_view_renders_and_is_kept_as_a_screenshot(page, bound_pod, screenshot_dir,
                                                            view):
    uid, node = bound_pod
    response = page.goto(VIEWS[view].format(pod=uid, node=node))
    assert response.status == 200, f"{view} answered {response.status}"
    expect(page.locator("main h1")).not_to_be_empty()
    # Usable on a laptop: the page fits the window's width, nothing scrolls sideways.
    assert page.evaluate("document.documentElement.scrollWidth") <= page.viewport_size["width"]
    page.screenshot(path=screenshot_dir / f"{view}.png", full_page=True)
