"""A pod whose PersistentVolumeClaim does not exist (as the demo's `demo-restore-job`): its
page and the Pending page say kube-scheduler's own words for it (the why-pending capture's
missing-pvc), from the owner's claims watch through the whole stack; the claim created, the
page turns to the nodes, without a reload."""
import pytest
from playwright.sync_api import expect

from dashboard.models import PodRecord, PodState
from tests.browser.browserkit import wait_live
from tests.live.livestack import owner_status, state_of
from tests.waiting import wait_for

pytestmark = pytest.mark.timeout(180)

CLAIM = "demo-restore-snapshot"
NOT_RELOADED = "() => window.__notReloaded === true"


def test_a_pod_whose_claim_is_missing_says_so_until_the_claim_comes(page, stack, kube):
    wait_for(lambda: owner_status()["claims"]["known"], 30, "the owner's claims list")
    pod = kube.create_namespaced_pod("default", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "demo-restore-job"},
        "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/busybox:1.37",
                                 "resources": {"requests": {"cpu": "100m"}}}],
                 "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": CLAIM}}]}})
    claimed = False
    try:
        wait_for(lambda: state_of(pod.metadata.uid) == "Pending", 30,
                 "the owner to see the pending pod")
        wait_for(lambda: PodRecord.objects.filter(uid=pod.metadata.uid,
                                                  state=PodState.PENDING).exists(), 30,
                 "the pending pod's row, which the page draws")
        nodes = owner_status()["nodes"]
        said = (f'0/{nodes} nodes are available: persistentvolumeclaim "{CLAIM}" not found. '
                "not found")
        page.goto("/pending/?namespace=default")
        row = page.locator("#pending-list tr", has_text="demo-restore-job")
        expect(row.locator("td.reason")).to_contain_text(f'persistentvolumeclaim "{CLAIM}" '
                                                         "not found")
        page.goto(f"/pods/{pod.metadata.uid}/")
        wait_live(page)
        page.evaluate("() => { window.__notReloaded = true; }")
        expect(page.locator("#pod-diagnosis .diagnosis-summary")).to_contain_text(said)
        claims_before = owner_status()["claims"]["count"]
        kube.create_namespaced_persistent_volume_claim("default", {
            "metadata": {"name": CLAIM},
            "spec": {"accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": "1Gi"}}}})
        claimed = True
        # The owner's watch first (a failure then says which side was late), then the page,
        # live: the recount the claim starts nudges it.
        wait_for(lambda: owner_status()["claims"]["count"] > claims_before, 60,
                 "the owner's claims watch to show the new claim")
        # No stand-in places it on the browser stack: it waits, fitting the nodes. The
        # section asks again on the owner's nudge or every 60 s, whichever comes first (CI
        # once waited more than 30 s for the nudge): either is live, neither a reload.
        expect(page.locator("#pod-diagnosis")).to_contain_text("Nodes that take it now",
                                                                timeout=75_000)
        expect(page.locator("#pod-diagnosis .diagnosis-summary")).not_to_contain_text(CLAIM)
        assert page.evaluate(NOT_RELOADED), "the page was reloaded"
    finally:
        kube.delete_namespaced_pod("demo-restore-job", "default", grace_period_seconds=0,
                                   _preload_content=False)
        if claimed:
            kube.delete_namespaced_persistent_volume_claim(CLAIM, "default",
                                                           _preload_content=False)
