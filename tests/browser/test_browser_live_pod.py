"""A pod's page follows the cache live, and an operator acts on it from there.

The pod is assumed in the owner's cache the way kube-scheduler's extender does it, with
its bind held back: an assumed pod whose binding never finished never expires, so it
stays Assumed for as long as the test needs, with no timing to race. The bind is then
queued through Celery as the dashboard's own scheduler queues it."""
import pytest
from playwright.sync_api import expect

from dashboard.clients.owner_client import send
from tests.browser.browserkit import wait_live
from tests.live.livestack import new_pod, state_of
from tests.waiting import wait_for

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def assumed_pod(kube, request):
    """A new pending pod of the cluster, assumed on a node with no bind queued:
    (uid, name, node)."""
    name = request.node.name.removeprefix("test_").replace("_", "-")[:50]
    uid = new_pod(kube, name)
    wait_for(lambda: state_of(uid) == "Pending", 30, "the owner to see the pending pod")
    node = kube.list_node().items[0].metadata.name
    send("assume", {"uid": uid, "node": node}, actor="browser-test", timeout=10)
    return uid, name, node


def shown_state(page, uid):
    """The pod's state in the read model the pages render, over the REST API."""
    response = page.request.get(f"/api/v1/pods/{uid}")
    return response.json()["state"] if response.ok else None


def open_assumed(page, uid):
    """Open the pod's page once the read model has it Assumed (the owner writes it in
    batches, a moment after the cache changed), and wait for its live socket."""
    wait_for(lambda: shown_state(page, uid) == "Assumed", 30, "the read model to catch up")
    page.goto(f"/pods/{uid}/")
    expect(page.locator("#pod-state")).to_have_attribute("data-state", "Assumed")
    wait_live(page)


def stays_loaded(page):
    """Mark the page's window: the mark survives in-place updates, never a reload."""
    page.evaluate("window.__sameLoad = true")


def test_an_assumed_pod_turns_added_without_a_reload(page, assumed_pod):
    from dashboard.worker.tasks import bind_pod
    uid, name, node = assumed_pod
    open_assumed(page, uid)
    stays_loaded(page)
    bind_pod.delay(uid, "default", name, node)
    expect(page.locator("#pod-state")).to_have_attribute("data-state", "Added")
    assert page.evaluate("window.__sameLoad") is True, "the page reloaded"
    assert state_of(uid) == "Added"


def test_an_operator_forgets_an_assumed_pod_from_its_page(page, assumed_pod):
    uid, _, node = assumed_pod
    open_assumed(page, uid)
    page.click("button[name=action][value=forget]")
    confirm = page.locator("#confirm")
    expect(confirm).to_be_visible()
    # What it will change: the node's aggregates, before and after.
    expect(page.locator("#confirmation")).to_contain_text(node)
    expect(page.locator("#confirmation table.preview tr.changes").first).to_be_visible()
    assert state_of(uid) == "Assumed", "asking for confirmation changed the cache"
    confirm.click()
    expect(page.locator("#pod-state")).not_to_have_attribute("data-state", "Assumed")
    assert state_of(uid) == "Pending"          # out of the cache, pending in the cluster
