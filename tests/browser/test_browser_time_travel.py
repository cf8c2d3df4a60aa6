"""The pods pages at a moment of the past, in a real browser under the CSP (issue 24): a
pod's page as the cache held it then, the list at a moment with `at` kept in its links,
a 404 page for a pod the cache did not hold then, and the header's scrubber, by keyboard
and by pointer, back to live in one click."""
import re

import pytest
from playwright.sync_api import expect

from tests.browser.browserkit import TIMEOUT_MS, wait_live
from tests.live.livestack import new_pod
from tests.waiting import wait_for

# No django_db mark: its transaction would hold SQLite's write lock against the owner's
# writes (conftest.database unblocks the database instead).
pytestmark = pytest.mark.timeout(180)


def latest_moment(page):
    """The latest moment the web can show, from the scrubber's end (None before the first
    checkpoint): read through the web, which sees what the owner wrote."""
    page.goto("/pods/")
    scrubber = page.locator("input.scrubber")
    return int(scrubber.get_attribute("max")) if scrubber.count() else None


def read_model_state(page, uid):
    response = page.request.get(f"/api/v1/pods/{uid}")
    return response.json()["state"] if response.ok else None


@pytest.fixture
def appeared(kube, page):
    """A pod bound in the cluster after a checkpoint: (uid, name, a moment before it was
    cached, a moment after)."""
    before = wait_for(lambda: latest_moment(page), 90, "the owner's first checkpoint")
    name = "travelled-pod"
    node = kube.list_node().items[0].metadata.name
    uid = new_pod(kube, name, node=node)
    wait_for(lambda: read_model_state(page, uid) == "Added", 30, "the read model to hold it")
    return uid, name, before, latest_moment(page)


def test_a_pod_and_the_pods_list_at_a_moment_and_the_scrubber(page, appeared):
    uid, name, before, after = appeared
    page.goto(f"/pods/{uid}/?at={after}")
    expect(page.locator("#past-banner")).to_contain_text(f"seq {after}")
    expect(page.locator("#past-pod")).to_contain_text("Added")
    expect(page.locator("table.timeline")).to_contain_text("added")
    assert page.locator("[ws-connect]").count() == 0      # nothing live on the past

    missing = page.goto(f"/pods/{uid}/?at={before}")
    assert missing.status == 404
    expect(page.locator("main [role=alert]")).to_contain_text("was not in the cache then")

    page.goto(f"/pods/?at={after}&q={name}")
    link = page.locator(f'#past-pods a[href="/pods/{uid}/?at={after}"]')
    expect(link).to_have_text(name)

    # the keyboard: Home is the oldest kept moment, Enter goes there (filters kept)
    scrubber = page.locator("input.scrubber")
    oldest = int(scrubber.get_attribute("min"))
    scrubber.focus()
    page.keyboard.press("Home")
    expect(page.locator("#scrubber-value")).to_have_text(f"seq {oldest}")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(rf"/pods/\?q={name}&at={oldest}$"), timeout=TIMEOUT_MS)
    expect(page.locator("#past-banner")).to_contain_text(f"seq {oldest}")
    expect(page.locator("#past-pods")).not_to_contain_text(name)   # not cached yet then

    # the pointer: let go at the right end, the latest moment
    box = scrubber.bounding_box()
    page.mouse.click(box["x"] + box["width"] - 1, box["y"] + box["height"] / 2)
    page.wait_for_url(re.compile(r"/pods/\?q=.*&at=\d+$"), timeout=TIMEOUT_MS)
    expect(page.locator("#past-pods")).to_contain_text(name)

    page.click("a.live-link")
    page.wait_for_url(re.compile(r"/pods/$"), timeout=TIMEOUT_MS)
    wait_live(page)
