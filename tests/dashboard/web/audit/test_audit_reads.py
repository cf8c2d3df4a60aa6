"""The Audit page and GET /api/v1/audit read the same rows: newest first, filtered,
paged back by cursor, with the door, the reason and what a forced assume went past;
bad filters are a 400 that says why; nothing without a login."""
import re

import pytest
from django.core.management import call_command
from django.test import Client

from dashboard.models import AuditAction

pytestmark = pytest.mark.django_db


def act(action, target, ok=True, **details):
    return AuditAction.objects.create(actor=details.pop("actor", "alice"), action=action,
                                      target=target, node="n1", ok=ok,
                                      message="" if ok else "pod is Added, not Assumed",
                                      details=details)


def ids(html):
    return [int(i) for i in re.findall(r'<tr id="audit-(\d+)"', html)]


def test_the_page_lists_newest_first_and_pages_back_by_cursor(viewer_client):
    rows = [act("forget", f"uid-{i}", via="page", reason=f"because {i}") for i in range(5)]
    html = viewer_client.get("/audit/?per_page=2").content.decode()
    assert ids(html) == [rows[4].id, rows[3].id]
    older = re.search(r'<a href="\?([^"]+)" rel="next">', html).group(1).replace("&amp;", "&")
    html = viewer_client.get(f"/audit/?{older}").content.decode()
    assert ids(html) == [rows[2].id, rows[1].id] and 'rel="first"' in html
    older = re.search(r'<a href="\?([^"]+)" rel="next">', html).group(1).replace("&amp;", "&")
    html = viewer_client.get(f"/audit/?{older}").content.decode()
    assert ids(html) == [rows[0].id] and 'rel="next"' not in html
    assert "because 0</td>" in html and "<td>page</td>" in html


def test_filters_combine_and_refusals_and_forced_assumes_say_so(viewer_client):
    act("forget", "uid-a", actor="bob")
    refused = act("expire", "uid-a", ok=False)
    forced = act("schedule", "uid-b", forced_past="Insufficient cpu", force=True)
    html = viewer_client.get("/audit/?result=refused").content.decode()
    assert ids(html) == [refused.id] and "refused</span>: pod is Added, not Assumed" in html
    html = viewer_client.get("/audit/?target=uid-a&actor=alice").content.decode()
    assert ids(html) == [refused.id]
    html = viewer_client.get("/audit/?action=schedule").content.decode()
    assert ids(html) == [forced.id] and "forced past: Insufficient cpu" in html


@pytest.mark.parametrize("query, says", [("result=maybe", "result: one of done, refused"),
                                         ("before=x", "before: expected a whole number"),
                                         ("per_page=0", "per_page: between 1 and 500"),
                                         ("actor=%00", "actor: control characters are not allowed")])
def test_a_bad_filter_is_a_400_saying_why(viewer_client, api_token, query, says):
    page = viewer_client.get(f"/audit/?{query}")
    assert page.status_code == 400 and says in page.content.decode()
    api = Client(HTTP_AUTHORIZATION=f"Bearer {api_token}").get(f"/api/v1/audit?{query}")
    assert api.status_code == 400 and isinstance(api.json()["error"], str)


def test_the_api_reads_the_same_rows_and_pages_by_next_before(api_token):
    rows = [act("forget", f"uid-{i}", via="api token", reason="r") for i in range(3)]
    api = Client(HTTP_AUTHORIZATION=f"Bearer {api_token}")
    first = api.get("/api/v1/audit?per_page=2").json()
    assert [item["id"] for item in first["items"]] == [rows[2].id, rows[1].id]
    assert first["items"][0]["via"] == "api token" and first["items"][0]["reason"] == "r"
    rest = api.get(f"/api/v1/audit?per_page=2&before={first['next_before']}").json()
    assert [item["id"] for item in rest["items"]] == [rows[0].id]
    assert rest["next_before"] is None


def test_issuing_a_token_is_audited(operator, capsys):
    call_command("apitoken", operator.username, "--name", "ci")
    row = AuditAction.objects.get(action="issue_token")
    assert (row.actor, row.ok, row.message) == ("manage.py apitoken", True, "ci")
    assert row.target.endswith(f"of {operator.username}")


def test_nothing_without_a_login(client):
    assert client.get("/audit/").status_code == 302
    assert client.get("/api/v1/audit").status_code == 401
