"""Every page works under the Content-Security-Policy: loaded, live sockets open, htmx swaps
done, the API docs drawn, and nothing refused (the `page` fixture fails a test on any
refusal Chromium reports). The policy is enforced, not just sent: an inline script a page
somehow got is refused."""
import re

import pytest
from playwright.sync_api import expect

from tests.browser.browserkit import TIMEOUT_MS, is_csp_violation, log_in, wait_live

pytestmark = pytest.mark.timeout(300)

PAGES = ["/", "/pods/", "/pods/{pod}/", "/pods/{pod}/forget/", "/nodes/", "/nodes/{node}/",
         "/zones/", "/snapshot/", "/events/", "/pools/", "/statuses/", "/pending/"]


@pytest.fixture(scope="module")
def bound_pod(kube):
    pod = next(p for p in kube.list_pod_for_all_namespaces().items if p.spec.node_name)
    return pod.metadata.uid, pod.spec.node_name


@pytest.mark.parametrize("path", PAGES)
def test_each_page_works_under_the_policy(page, bound_pod, path):
    uid, node = bound_pod
    response = page.goto(path.format(pod=uid, node=node))
    assert response.status == 200
    assert "script-src 'self'" in response.headers["content-security-policy"]
    expect(page.locator("main h1")).not_to_be_empty()
    if page.locator("[ws-connect]").count():
        wait_live(page)       # connect-src lets the live socket open


def test_htmx_filters_swap_the_list_in_place(page):
    page.goto("/pods/?per_page=5")
    wait_live(page)
    page.select_option("form.pod-filters select[name=state]", "Added")
    page.click("form.pod-filters button[type=submit]")
    page.wait_for_url("**/pods/?*state=Added*")
    expect(page.locator("#pod-list")).to_be_visible()
    page.goto("/events/")
    page.fill("form.event-filters input[name=namespace]", "default")
    page.click("form.event-filters button[type=submit]")
    page.wait_for_url("**/events/?*namespace=default*")


def test_the_pods_countdown_and_events_scripts_run(page):
    """Our static scripts load from 'self' and run: the events page's script asks the socket
    for what the page missed on connect, which the server answers with a push."""
    page.goto("/pods/")
    assert page.evaluate("[...document.scripts].some(s => s.src.endsWith('/countdown.js'))")
    page.goto("/events/")
    wait_live(page)
    assert page.evaluate("[...document.scripts].some(s => s.src.endsWith('/events.js'))")


def test_the_events_page_pauses_and_resumes_live_rows(page, kube, bound_pod):
    """Paused, a push waits (counted, not shown) and moves no cursor; Resume applies it."""
    name = "held-by-pause"
    page.goto(f"/events/?pod=default/{name}")
    wait_live(page)
    page.click("#events-pause")
    expect(page.locator("#events-pause")).to_have_text("Resume")
    kube.create_namespaced_pod("default", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"nodeName": bound_pod[1], "containers": [
            {"name": "app", "image": "registry.example/app:1"}]}})
    try:
        expect(page.locator("#events-waiting")).to_have_text(
            re.compile(r"[1-9][0-9]* new events? waiting"))
        assert page.locator("#event-rows tr.event").count() == 0
        page.click("#events-pause")
        expect(page.locator("#event-rows tr.event").first).to_contain_text(f"default/{name}")
        expect(page.locator("#events-waiting")).to_have_text("")
        expect(page.locator("#events-pause")).to_have_text("Pause")
    finally:
        kube.delete_namespaced_pod(name, "default", grace_period_seconds=0)


def test_the_api_docs_render(page):
    page.goto("/api/v1/docs")
    expect(page.locator(".swagger-ui .info")).to_be_visible()
    expect(page.locator(".opblock").first).to_be_visible()


def test_the_login_page_works_under_the_policy(browser, stack, operator_account):
    context = browser.new_context(base_url=stack.web_url)
    context.set_default_timeout(TIMEOUT_MS)
    tab = context.new_page()
    refused = []
    tab.on("console", lambda m: refused.append(m.text) if is_csp_violation(m.text) else None)
    try:
        tab.goto("/accounts/login/")
        log_in(tab, *operator_account)
        tab.wait_for_url(f"{stack.web_url}/")
    finally:
        context.close()
    assert refused == []


def test_an_inline_script_is_refused_and_reported(browser, stack, signed_in):
    context = browser.new_context(storage_state=signed_in, base_url=stack.web_url)
    context.set_default_timeout(TIMEOUT_MS)
    tab = context.new_page()
    try:
        tab.goto("/")
        with tab.expect_console_message(lambda m: is_csp_violation(m.text)) as refusal:
            ran = tab.evaluate("""() => {
                const script = document.createElement("script");
                script.textContent = "window.__inline = true";
                document.body.append(script);
                return window.__inline === true;
            }""")
        assert ran is False
        assert "script-src" in refusal.value.text
    finally:
        context.close()
