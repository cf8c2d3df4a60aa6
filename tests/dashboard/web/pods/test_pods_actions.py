"""Acting from a pod's page against a real cache owner over the run's Redis: the
confirmation changes nothing, confirming does it and is audited, and the state machine's
refusal comes back as a clear message with nothing changed."""
import re

import pytest

from dashboard.models import AuditAction, PodRecord
from tests.waiting import wait_for

pytestmark = pytest.mark.timeout(60)


def record_state(uid):
    return PodRecord.objects.get(uid=uid).state


def test_an_operator_forgets_an_assumed_pod_after_confirming(real_owner, operator_client):
    owner, uids = real_owner
    uid = uids["web"]
    page = operator_client.get(f"/pods/{uid}/").content.decode()
    assert 'data-state="Assumed"' in page and 'value="forget"' in page

    asked = operator_client.post(f"/pods/{uid}/forget/", {"action": "forget"})
    html = asked.content.decode()
    assert asked.status_code == 200 and 'id="confirm"' in html
    assert re.search(r'Pods</th><td class="num">2</td><td class="num">1</td>', html)
    assert re.search(r'Requested CPU</th><td class="num">1.5 cores</td><td class="num">1 core</td>',
                     html)
    assert owner.cache.pod_state({"metadata": {"uid": uid}}) == "Assumed"
    assert not AuditAction.objects.exists()

    done = operator_client.post(f"/pods/{uid}/forget/", {"action": "forget", "confirm": "yes"})
    assert done.status_code == 302 and done["Location"] == f"/pods/{uid}/?done=forget"
    [audit] = AuditAction.objects.all()
    assert (audit.actor, audit.action, audit.target, audit.ok) == ("operator", "forget", uid, True)
    wait_for(lambda: record_state(uid) == "Forgotten", 20, "the forgotten pod's row")
    page = operator_client.get(done["Location"]).content.decode()
    assert "Forget: done." in page and 'data-state="Forgotten"' in page
    assert re.search(r"<th scope=\"row\">forgotten</th>\s*<td>Assumed → Forgotten</td>\s*"
                     r"<td>operator<div class=\"cause-detail\">forgotten by operator</div></td>"
                     r"\s*<td>operator</td>", page)     # the forget's reason, on the timeline


def test_expire_now_expires_the_pod_and_the_audit_keeps_the_reason_given(real_owner,
                                                                          operator_client):
    _, uids = real_owner
    uid = uids["web"]
    asked = operator_client.post(f"/pods/{uid}/expire/", {"action": "expire"}).content.decode()
    assert '<input name="reason" maxlength="500"' in asked
    done = operator_client.post(f"/pods/{uid}/expire/", {"action": "expire", "confirm": "yes",
                                                         "reason": "  node web-3 rebooting "})
    assert done.status_code == 302
    wait_for(lambda: record_state(uid) == "Expired", 20, "the expired pod's row")
    audit = operator_client.get("/audit/?action=expire").content.decode()
    row = audit.split('class="done">', 1)[1].split("</tr>", 1)[0]
    assert f'<a href="/pods/{uid}/">{uid}</a>' in row
    assert "<td>operator</td>" in row and "<td>page</td>" in row
    assert "node web-3 rebooting</td>" in row


def test_the_state_machine_refuses_and_nothing_changes(real_owner, operator_client):
    owner, uids = real_owner
    uid = uids["db"]
    generation = owner.cache.generation
    response = operator_client.post(f"/pods/{uid}/forget/",
                                    {"action": "forget", "confirm": "yes"})
    html = response.content.decode()
    assert response.status_code == 409
    assert re.search(r'<p class="error" role="alert">Forget refused: [^<]+\. '
                     r'Nothing was changed\.</p>', html)
    assert 'data-state="Added"' in html
    assert owner.cache.pod_state({"metadata": {"uid": uid}}) == "Added"
    assert owner.cache.generation == generation
    [audit] = AuditAction.objects.all()
    assert not audit.ok and audit.details["status"] == 409


def test_an_added_pod_offers_no_forget_and_a_pending_one_offers_assume(real_owner,
                                                                       operator_client):
    """Forget and Expire on an Added pod ended in a 409 after confirmation; there was no
    Assume in the pages."""
    _, uids = real_owner
    added = operator_client.get(f"/pods/{uids['db']}/").content.decode()
    assert 'value="forget"' not in added and 'value="assume"' not in added
    asked = operator_client.get(f"/pods/{uids['db']}/forget/").content.decode()
    assert "Only an Assumed pod can be forgotten: this one is <strong>Added</strong>" in asked
    assert 'id="confirm"' not in asked
    pending = operator_client.get(f"/pods/{uids['queued']}/").content.decode()
    assert 'value="assume"' in pending and 'value="forget"' not in pending
    assert '<option value="n1">' in pending


def test_an_operator_assumes_a_pending_pod_on_a_node_after_confirming(real_owner,
                                                                      operator_client):
    owner, uids = real_owner
    uid = uids["queued"]
    asked = operator_client.post(f"/pods/{uid}/assume/", {"action": "assume", "node": "n1"})
    html = asked.content.decode()
    assert asked.status_code == 200 and 'id="confirm"' in html and "Assume on n1" in html
    assert re.search(r'Pods</th><td class="num">2</td><td class="num">3</td>', html)
    assert not AuditAction.objects.exists()
    done = operator_client.post(f"/pods/{uid}/assume/",
                                {"action": "assume", "node": "n1", "confirm": "yes"})
    assert done.status_code == 302 and done["Location"] == f"/pods/{uid}/?done=assume"
    [audit] = AuditAction.objects.all()
    assert (audit.actor, audit.action, audit.node, audit.ok) == ("operator", "schedule", "n1", True)
    wait_for(lambda: record_state(uid) == "Assumed", 20, "the assumed pod's row")
    bad = operator_client.post(f"/pods/{uid}/assume/", {"action": "assume", "node": "nowhere"})
    assert bad.status_code == 400 and "no node named &#x27;nowhere&#x27;" in bad.content.decode()
