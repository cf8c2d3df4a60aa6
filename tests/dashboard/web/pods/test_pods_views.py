"""The pods pages over HTTP: the list's filters, sorting and pages, the pod's diagram and
timeline, the confirmation page, and every bad input answered with a page, not a traceback."""
import re

import pytest

from dashboard.models import AuditAction, PodRecord
from tests.dashboard.web.pods.podpages import T0, node, pod, transition

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _redis(redis_url):
    """Pages read the owner's status from Redis."""


def get(client, url, status=200, **headers):
    response = client.get(url, **headers)
    assert response.status_code == status, response.content[:2000]
    return response, response.content.decode()


def row_ids(html):
    return re.findall(r'<tr id="pod-([^"]+)"', html)


# --- the list -------------------------------------------------------------------------------
def test_the_list_filters_sorts_and_pages_from_the_query_string(viewer_client):
    for i in range(3):
        pod(f"t{i}", "Added", namespace="team", node=f"n{2 - i}")
    pod("o", "Assumed", namespace="other", node="n1")
    _, html = get(viewer_client, "/pods/?namespace=team&sort=-node&per_page=2")
    assert row_ids(html) == ["t0", "t1"]
    assert "<h2>3 pods matching</h2>" in html
    assert re.search(r'<select name="namespace">\s*<option value="">All</option>\s*'
                     r'<option>other</option><option selected>team</option>', html)
    assert '<input type="hidden" name="per_page" value="2">' in html
    assert 'ws-connect="/ws/pods/?namespace=team&amp;sort=-node&amp;per_page=2"' in html
    assert 'aria-sort="descending"><a href="?namespace=team&amp;sort=node&amp;per_page=2"' in html
    assert "1–2 of 3 (page 1 of 2)" in html
    following = re.search(r'<a href="\?([^"]+)"[^>]* rel="next"', html).group(1)
    assert following.startswith("namespace=team&amp;sort=-node&amp;per_page=2&amp;cursor=")
    _, html = get(viewer_client, "/pods/?" + following.replace("&amp;", "&"))
    assert row_ids(html) == ["t2"] and "3–3 of 3 (page 2 of 2)" in html
    assert re.search(r'<a href="\?namespace=team&amp;sort=-node&amp;per_page=2"[^>]* rel="first"',
                     html)
    _, html = get(viewer_client, "/pods/?namespace=team&sort=-node&per_page=2&page=2")
    assert row_ids(html) == ["t2"]


def test_a_zone_is_a_link_to_its_nodes_on_the_list_the_pod_and_the_node(viewer_client):
    node("n1", zone="zone b/1")
    pod("z", "Added", node="n1", zone="zone b/1")
    pod("none", "Pending")
    link = '<a href="/nodes/?zone=zone%20b/1"'
    _, html = get(viewer_client, "/pods/")
    assert html.count(link) == 1          # the pending pod has no zone: a dash, no link
    assert link in get(viewer_client, "/pods/z/")[1]
    assert link in get(viewer_client, "/nodes/n1/")[1]


def test_the_last_page_is_one_link_away_and_a_page_past_it_is_a_400(viewer_client):
    for i in range(120):
        pod(f"p{i:03}")
    _, html = get(viewer_client, "/pods/")
    assert "<h2>120 pods</h2>" in html and "1–50 of 120 (page 1 of 3)" in html
    last = re.search(r'<a href="\?([^"]+)"[^>]* rel="last"', html).group(1)
    _, html = get(viewer_client, "/pods/?" + last.replace("&amp;", "&"))
    # What the full pages before it leave: no overlap with page 2, and numbered last.
    assert row_ids(html)[-1] == "p119" and len(row_ids(html)) == 20
    assert "101–120 of 120 (page 3 of 3)" in html and '<span class="muted">Next</span>' in html
    _, html = get(viewer_client, "/pods/?page=4", status=400)
    assert "page: 4 is past the last page, 3" in html


def test_counts_have_thousands_separators(viewer_client):
    PodRecord.objects.bulk_create(PodRecord(uid=f"p{i:04}", namespace="n", name=f"p{i:04}",
                                            state="Added") for i in range(1234))
    _, html = get(viewer_client, "/pods/")
    assert "<h2>1,234 pods</h2>" in html and "All <small>1,234</small>" in html


def test_the_state_tabs_count_under_the_other_filters(viewer_client):
    pod("a", "Added", namespace="team")
    pod("b", "Assumed", namespace="team")
    pod("c", "Assumed", namespace="other")
    _, html = get(viewer_client, "/pods/?namespace=team")
    assert '<a href="?state=Assumed&amp;namespace=team"' in html
    assert re.search(r'state=Assumed&amp;namespace=team"[^>]*>Assumed <small>1</small>', html)
    assert re.search(r'href="\?namespace=team"[^>]*aria-current="true">All <small>2</small>', html)


def test_assumed_rows_count_down_to_their_expiry_and_stuck_ones_stand_out(viewer_client):
    pod("bound", "Assumed", binding_finished=True, deadline=4102444800.5)   # year 2100
    pod("stuck", "Assumed", changed_at=T0)
    _, html = get(viewer_client, "/pods/")
    assert re.search(r'<small class="expiry-countdown" data-deadline="4102444800.500">expires in \d+ s',
                     html)
    assert '<tr id="pod-stuck" class="stuck">' in html
    assert "stuck: binding unfinished" in html
    assert re.search(r'<script src="/static/countdown.js" data-now="\d+\.\d{3}"></script>',
                     html)   # the countdown itself, told the server's clock


@pytest.mark.parametrize("query, message", [
    ("state=Running", "state: unknown state &#x27;Running&#x27;"),
    ("page=x", "page: expected a whole number"),
    ("sort=secret", "sort: unknown sort"),
])
def test_a_bad_filter_gets_a_400_page_saying_why(viewer_client, query, message):
    pod("a")
    _, html = get(viewer_client, f"/pods/?{query}", status=400)
    assert "Bad filter:</strong> " + message in html
    assert row_ids(html) == [] and "<h1>Pods</h1>" in html


def test_htmx_gets_the_list_section_alone(viewer_client):
    pod("a", "Added")
    _, html = get(viewer_client, "/pods/?state=Added", HTTP_HX_REQUEST="true")
    assert html.lstrip().startswith('<section id="pod-list"')
    assert row_ids(html) == ["a"] and "<html" not in html


def test_the_filter_form_works_without_javascript(viewer_client):
    _, html = get(viewer_client, "/pods/")
    form = re.search(r'<form class="pod-filters" method="get" action="/pods/"[^>]*>', html)
    assert form and 'hx-push-url="true"' in form.group(0)
    for name in ("state", "namespace", "node", "zone", "q", "sort"):
        assert f'name="{name}"' in html


def test_the_list_needs_a_login(client):
    response = client.get("/pods/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


# --- one pod --------------------------------------------------------------------------------
def assumed_then_added(uid="p1"):
    pod(uid, "Added", node="n1", milli_cpu=500)
    transition(uid, "pod_assumed", "Initial", "Assumed", cause="operator", actor="alice")
    transition(uid, "pod_binding_finished", "Assumed", "Assumed", cause="bind")
    transition(uid, "pod_confirmed", "Assumed", "Added")


def test_the_pod_page_lights_its_state_and_marks_the_path_it_took(viewer_client):
    assumed_then_added()
    _, html = get(viewer_client, "/pods/p1/")
    assert '<strong id="pod-state" data-state="Added"' in html
    assert '<g class="node current visited" data-state="Added">' in html
    assert '<g class="node visited" data-state="Assumed">' in html
    assert '<g class="node" data-state="Expired">' in html
    taken = re.findall(r'<g class="edge taken" data-edge="([^"]+)">', html)
    assert taken == ["Initial-Assumed", "Assumed-Assumed", "Assumed-Added"]
    assert '<g class="edge" data-edge="Assumed-Expired">' in html
    assert 'ws-connect="/ws/pods/p1/"' in html


def test_the_timeline_lists_every_transition_newest_first_with_cause_and_actor(viewer_client):
    assumed_then_added()
    _, html = get(viewer_client, "/pods/p1/")
    rows = re.findall(r'<th scope="row">([^<]+)</th>\s*<td>([^<]+)</td>\s*<td>([^<]+)</td>'
                      r'\s*<td>([^<]+)</td>', html)
    assert rows == [("confirmed by the watch", "Assumed → Added", "watch event", "–"),
                    ("binding finished", "Assumed → Assumed", "bind result", "–"),
                    ("assumed", "Initial → Assumed", "operator", "alice")]


def test_a_timeline_whose_beginning_was_pruned_says_so(viewer_client):
    from dashboard.worker import history_retention
    assumed_then_added("old")
    assumed_then_added("young")
    history_retention.prune(keep=4)      # old keeps only its confirmation, young all three
    _, old = get(viewer_client, "/pods/old/")
    _, young = get(viewer_client, "/pods/young/")
    assert "Earlier transitions of this pod were pruned" in old
    assert "Earlier transitions" not in young and "assumed" in young


def test_a_forgotten_pod_that_was_assumed_again_keeps_a_connected_path(viewer_client):
    pod("p2", "Assumed", node="n1")
    transition("p2", "pod_assumed", "Initial", "Assumed")
    transition("p2", "pod_forgotten", "Assumed", "Initial", cause="bind")
    transition("p2", "pod_assumed", "Initial", "Assumed")
    _, html = get(viewer_client, "/pods/p2/")
    taken = re.findall(r'<g class="edge taken" data-edge="([^"]+)">', html)
    assert taken == ["Initial-Assumed", "Assumed-Forgotten", "Forgotten-Assumed"]
    assert "Assumed → Forgotten" in html


def test_a_pending_pod_sits_in_the_seeds_initial_state(viewer_client):
    pod("new", "Pending")
    _, html = get(viewer_client, "/pods/new/")
    assert '<strong id="pod-state" data-state="Pending"' in html
    assert '<g class="node current visited" data-state="Initial">' in html
    assert "No transitions recorded yet" in html


def test_a_deleted_pod_is_shown_from_its_history(viewer_client):
    transition("gone", "pod_added", "Initial", "Added")
    transition("gone", "pod_removed", "Added", "Deleted")
    _, html = get(viewer_client, "/pods/gone/")
    assert '<strong id="pod-state" data-state="Deleted"' in html
    assert "left the read model; its history remains" in html


def test_an_unknown_pod_is_a_404_page(viewer_client):
    _, html = get(viewer_client, "/pods/nobody/", status=404)
    assert "No pod with uid <code>nobody</code>" in html
    for uid in ("%00", "x" * 300):
        get(viewer_client, f"/pods/{uid}/", status=404)


def test_action_buttons_only_for_those_allowed_to_act(viewer_client, operator_client):
    pod("a1", "Assumed", node="n1")
    _, html = get(viewer_client, "/pods/a1/")
    assert 'name="action"' not in html
    _, html = get(operator_client, "/pods/a1/")
    for action in ("forget", "expire"):
        assert (f'<form method="post" action="/pods/a1/{action}/" data-when="Assumed">' in html
                and f'name="action" value="{action}"' in html)


# --- the confirmation -----------------------------------------------------------------------
def test_the_confirmation_shows_the_node_before_and_after_and_changes_nothing(operator_client):
    node("n1", pods=3, cpu=1500, memory=768 * 1024**2, non_zero_cpu=1600,
         non_zero_memory=968 * 1024**2)
    pod("a1", "Assumed", node="n1", milli_cpu=500, memory=256 * 1024**2)
    response = operator_client.post("/pods/a1/forget/", {"action": "forget"})
    assert response.status_code == 200
    html = response.content.decode()
    assert '<button type="submit" id="confirm" name="confirm" value="yes">Forget</button>' in html
    assert re.search(r"Pods</th><td class=\"num\">3</td><td class=\"num\">2</td>", html)
    assert re.search(r"Requested CPU</th><td class=\"num\">1.5 cores</td><td class=\"num\">1 core",
                     html)
    assert "Node n1: before and after" in html
    assert PodRecord.objects.get(uid="a1").state == "Assumed"
    assert not AuditAction.objects.exists()


def test_the_confirmation_warns_when_the_pod_is_not_assumed(operator_client):
    pod("p1", "Added", node="n1")
    _, html = get(operator_client, "/pods/p1/expire/")
    assert "Only an Assumed pod can be expired: this one is <strong>Added</strong>" in html
    assert 'id="confirm"' not in html                     # nothing to confirm


def test_acting_needs_the_permission(viewer_client, caplog):
    pod("a1", "Assumed", node="n1")
    refused = viewer_client.get("/pods/a1/forget/")
    # An expected refusal: one line in the log, no traceback.
    assert not [r for r in caplog.records if r.exc_info]
    assert refused.status_code == 403
    page = refused.content.decode()
    assert "forget needs the act_on_pods permission" in page and "Log out" in page
    assert "Redis unreachable" not in page   # an error page claims nothing about the owner
    response = viewer_client.post("/pods/a1/forget/", {"action": "forget", "confirm": "yes"})
    assert response.status_code == 403
    assert not AuditAction.objects.exists()


def test_an_unknown_action_or_pod_is_a_404_page(operator_client):
    pod("a1", "Assumed", node="n1")
    _, html = get(operator_client, "/pods/a1/delete/", status=404)
    assert "There is no action “delete”" in html
    get(operator_client, "/pods/nobody/forget/", status=404)


def test_a_form_naming_another_action_is_refused(operator_client):
    pod("a1", "Assumed", node="n1")
    response = operator_client.post("/pods/a1/forget/", {"action": "expire", "confirm": "yes"})
    assert response.status_code == 400
    assert "nothing was done" in response.content.decode()
    assert not AuditAction.objects.exists()


def test_actions_need_csrf(operator):
    from django.test import Client
    client = Client(enforce_csrf_checks=True)
    client.force_login(operator)
    pod("a1", "Assumed", node="n1")
    response = client.post("/pods/a1/forget/", {"action": "forget", "confirm": "yes"})
    assert response.status_code == 403
    assert not AuditAction.objects.exists()
