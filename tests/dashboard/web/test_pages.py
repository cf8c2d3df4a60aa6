"""The pages show the read model the cache owner writes, with or without htmx.

Rows are made with the ORM; the owner's live status is a JSON value under
OWNER_STATUS in the run's Redis, as the owner writes it.
"""
import re
import time
from datetime import timedelta
from urllib.parse import quote

import orjson
import pytest
from django.conf import settings
from django.test import override_settings
from django.utils import timezone

from dashboard.models import ComparerRun, NodeRecord, PodRecord, SnapshotSample, Transition
from dashboard.readmodel import read_model
from dashboard.wire.clients import redis_client
from dashboard.wire.keys import OWNER_STATUS

pytestmark = pytest.mark.django_db

GIB = 1024**3
PAGES = [("/", "counts"), ("/nodes/", "node-table"), ("/zones/", "zone-groups"),
         ("/pods/", "pod-list")]


@pytest.fixture(autouse=True)
def owner(redis_url):
    """No live owner unless a test says so: `owner(seq=..., ...)` writes its status."""
    client = redis_client(settings.REDIS_URL)
    client.delete(OWNER_STATUS)

    def report(**counters):
        status = {"nodes": 0, "node_infos": 0, "pods": 0, "assumed": 0, "pending": 0,
                  "generation": 0, "snapshot_generation": 0, "seq": 0, "synced": True,
                  "feed_backlog": 0, "applied": 0, "skipped": 0, "commands": 0,
                  "at": time.time(), **counters}
        client.set(OWNER_STATUS, orjson.dumps(status), ex=10)
    yield report
    client.delete(OWNER_STATUS)


def node(name, zone="region-1/zone-a", tree_index=0, *, cpu=(0, 4000), memory=(0, 8 * GIB),
         has_node=True, pods=0, generation=1):
    return NodeRecord.objects.create(
        name=name, zone=zone, tree_index=tree_index, has_node=has_node, pods=pods,
        generation=generation,
        requested={"milli_cpu": cpu[0], "memory": memory[0], "ephemeral_storage": 0,
                   "allowed_pod_number": 0, "scalar_resources": {}},
        allocatable={"milli_cpu": cpu[1], "memory": memory[1], "ephemeral_storage": 0,
                     "allowed_pod_number": 110, "scalar_resources": {}})


def pod(uid, state="Added", *, namespace="default", name=None, node="", zone="",
        binding_finished=False, deadline=None, milli_cpu=0, memory=0):
    return PodRecord.objects.create(
        uid=uid, namespace=namespace, name=name or uid, state=state, node=node, zone=zone,
        binding_finished=binding_finished, deadline=deadline, milli_cpu=milli_cpu,
        memory=memory)


def pods(state, count, **fields):
    for index in range(count):
        pod(f"{state.lower()}-{index}", state, **fields)


_seq = iter(range(1, 10**6))


def transition(kind, at, **fields):
    return Transition.objects.create(seq=next(_seq), at=at, kind=kind, key=f"uid-{kind}",
                                     cause="reaper", **fields)


@pytest.fixture
def client(client, viewer):
    """Every page needs a login; these tests look as a viewer."""
    client.force_login(viewer)
    return client


def page(client, url, status=200, **headers):
    response = client.get(url, **headers)
    assert response.status_code == status, response.content
    return response, response.content.decode()


def squash(html: str) -> str:
    """The HTML with its whitespace runs cut to one space, to match text across lines."""
    return re.sub(r"\s+", " ", html)


# --- overview -------------------------------------------------------------------------------
def test_overview_counts_pods_by_state(client):
    pods("Pending", 3)
    pods("Added", 5)
    pods("Expired", 1)
    pods("Forgotten", 2)
    pods("Assumed", 3)
    pod("assumed-bound", "Assumed", binding_finished=True, deadline=time.time() + 30)
    response, html = page(client, "/")
    assert response.context["overview"].pods == read_model.PodCounts(
        pending=3, assumed=4, binding_finished=1, added=5, expired=1, forgotten=2)
    html = squash(html)
    # Pending leads to the Pending page (the queue, with reasons), the rest to the pods list
    assert re.search(r'<a href="/pending/"[^>]*>Pending</a></dt><dd>3</dd>', html)
    for state, label, count in [("Assumed", "Assumed", 4),
                                ("Added", "Added", 5), ("Expired", "Expired now", 1),
                                ("Forgotten", "Forgotten now", 2)]:
        assert f'<a href="/pods/?state={state}">{label}</a></dt><dd>{count}</dd>' in html
    assert "1 binding finished" in html


def test_the_pending_card_names_the_top_reason_and_links_its_pods(client, owner):
    _, html = page(client, "/")
    assert 'id="pending-top"' not in html     # no live owner: no reasons counted
    owner(pending=7, pending_top=[
        {"reason": "Insufficient nvidia.com/gpu", "pods": 1200,
         "summary": "0/100 nodes are available: 100 Insufficient nvidia.com/gpu."},
        {"reason": "Insufficient cpu", "pods": 2, "summary": "0/100 nodes are available"}])
    _, html = page(client, "/")
    card = squash(html).split('id="pending-top">')[1].split("</dd>")[0]
    assert card == ('most: <a href="/pending/?reason=Insufficient%20nvidia.com%2Fgpu" '
                    'title="0/100 nodes are available: 100 Insufficient nvidia.com/gpu.">'
                    'Insufficient nvidia.com/gpu</a> (1,200)')


def test_overview_counts_what_expired_or_was_forgotten_in_the_last_five_minutes(client):
    now = timezone.now()
    transition("pod_expired", now - timedelta(minutes=1))
    transition("pod_expired", now - timedelta(minutes=4, seconds=50))
    transition("pod_expired", now - timedelta(minutes=6))        # too old
    transition("pod_forgotten", now - timedelta(seconds=5))
    transition("pod_forgotten", now - timedelta(hours=1))        # too old
    transition("pod_assumed", now)                               # another kind
    response, html = page(client, "/")
    recent = response.context["overview"].recent
    assert (recent.expired, recent.forgotten, recent.minutes) == (2, 1, 5)
    # Each number links to the events it counts (issue 24: a burst's events, one click away).
    expired_since = quote(recent.first_expired.isoformat())
    forgotten_since = quote(recent.first_forgotten.isoformat())
    assert (f'In the last 5 minutes: <a href="/events/?kind=pod_expired&amp;since={expired_since}">'
            f'<strong>2</strong> expired</a>, '
            f'<a href="/events/?kind=pod_forgotten&amp;since={forgotten_since}">'
            f'<strong>1</strong> forgotten</a> (each counted') in squash(html)
    listed = client.get(f"/events/?kind=pod_expired&since={expired_since}")
    assert listed.status_code == 200 and len(listed.context["events"].rows) == 2


def test_overview_shows_a_live_owner(client, owner):
    owner(seq=4321, synced=False, feed_backlog=1700, feed_lag=2.345, read_model_backlog=30000,
          at=time.time() - 3)
    response, html = page(client, "/")
    status = response.context["overview"].owner
    assert (status.live, status.seq, status.feed_backlog, status.synced) == (True, 4321, 1700,
                                                                              False)
    section = squash(html.split('<section class="panel" id="owner-status">')[1].split("</section>")[0])
    assert "Owner live" in section and "syncing" in section
    assert "<dt>Synced</dt><dd>no: still listing</dd>" in section
    assert "<dt>Sequence number</dt><dd>4,321</dd>" in section
    assert "<dt>Feed backlog</dt><dd>1,700</dd>" in section
    assert "<dt>Feed lag</dt><dd>2.3 s</dd>" in section
    assert "<dt>Not yet on these pages</dt><dd>30,000</dd>" in section
    assert "<dt>Reported</dt><dd>3 s ago</dd>" in section


def test_every_page_says_whether_an_owner_is_live(client, owner):
    for url, _ in PAGES:
        assert "No live owner" in page(client, url)[1]
    owner(seq=99)
    for url, _ in PAGES:
        _, html = page(client, url)
        assert "No live owner" not in html
        assert 'class="badge ok">Owner live</span> <span class="muted">seq 99</span>' in html


@override_settings(REDIS_URL="unix:///nonexistent/schedview-test.sock")
def test_pages_still_render_when_redis_is_unreachable(client):
    pods("Added", 2)
    response, html = page(client, "/")
    assert response.context["overview"].owner.state == "unreachable"
    assert "Redis unreachable" in html
    assert response.context["overview"].pods.added == 2


def test_overview_shows_the_latest_comparison_and_its_drift(client):
    now = timezone.now()
    ComparerRun.objects.create(at=now - timedelta(minutes=2), clean=True, report={"clean": True})
    ComparerRun.objects.create(at=now - timedelta(seconds=30), clean=False, report={
        "missed_pods": ["u1", "u2"], "redundant_pods": [], "stale_nodes": [["n1", "5", "6"]],
        "ghost_nodes": [["n2", 3]], "unconfirmed_assumed": ["u3", "u4"], "clean": False})
    response, html = page(client, "/")
    run = response.context["overview"].comparison
    assert (run.clean, run.when) == (False, "30 s ago")
    assert run.drift == [("missed pods", 2), ("stale nodes", 1)]
    section = squash(html.split('id="comparer">')[1].split("</section>")[0])
    assert '<span class="badge bad">Drift</span>' in section and "Clean" not in section
    assert "<li><strong>2</strong> missed pods</li><li><strong>1</strong> stale nodes</li>" in section
    assert "redundant pods" not in section
    assert ("Also 1 nodes deleted with pods left, 2 assumed pods not bound yet "
            "(states, not drift).") in section


def test_overview_counts_the_pages_rows_found_wrong(client):
    # the read model's own rows against the cache (dashboard/owner/row_drift.py)
    ComparerRun.objects.create(at=timezone.now(), clean=False, report={
        "rows_extra": [["pod", "u1", ["Added", "n1"], None], ["node", "n9", 4, None]],
        "rows_missing": [], "rows_stale": [["pod", "u2", ["Pending", ""], ["Added", "n1"]]],
        "rows_compared": True, "clean": False})
    section = squash(page(client, "/")[1].split('id="comparer">')[1].split("</section>")[0])
    assert '<span class="badge bad">Drift</span>' in section
    assert ("<li><strong>2</strong> rows of what the cache no longer holds</li>"
            "<li><strong>1</strong> rows behind the cache</li>") in section
    assert "rows missing" not in section


def test_overview_shows_a_clean_comparison_or_none(client):
    assert "No comparison yet." in page(client, "/")[1]
    ComparerRun.objects.create(at=timezone.now() - timedelta(minutes=3), clean=True,
                               report={"missed_pods": [], "clean": True})
    section = squash(page(client, "/")[1].split('id="comparer">')[1].split("</section>")[0])
    assert '<span class="badge ok">Clean</span>' in section
    assert "compared" in section and "3 min ago" in section
    assert "<ul" not in section and "No comparison yet." not in section


def test_overview_compares_the_latest_snapshot_with_the_cache_generation(client, owner):
    now = timezone.now()
    SnapshotSample.objects.create(at=now - timedelta(minutes=1), generation=900,
                                  cache_generation=900)  # a previous owner's: older
    SnapshotSample.objects.create(at=now - timedelta(seconds=2), generation=12,
                                  cache_generation=12)
    node("n1", generation=10)
    node("n2", generation=15)
    response, html = page(client, "/")
    lag = response.context["overview"].snapshot
    assert (lag.generation, lag.cache_generation, lag.cache_source, lag.behind) == (
        12, 15, "read model", 3)
    section = squash(html.split('id="snapshot">')[1].split("</section>")[0])
    assert "<dt>Generation</dt><dd>12 <small>taken 2 s ago</small></dd>" in section
    assert "<dt>Cache generation</dt><dd>15 <small>read model</small></dd>" in section
    assert "<dt>Lag</dt><dd>3 generations behind</dd>" in section

    owner(generation=20, snapshot_generation=12)   # a live owner knows the newest generation
    section = squash(page(client, "/")[1].split('id="snapshot">')[1].split("</section>")[0])
    assert "<dt>Cache generation</dt><dd>20 <small>live</small></dd>" in section
    assert "8 generations behind" in section

    owner(generation=12)
    assert "<dd>up to date</dd>" in page(client, "/")[1]


def test_overview_before_any_snapshot(client):
    assert "No snapshot taken yet." in page(client, "/")[1]


def test_overview_totals_nodes_and_their_requests(client):
    node("n1", cpu=(1500, 4000), memory=(2 * GIB, 8 * GIB))
    node("n2", cpu=(500, 4000), memory=(0, 8 * GIB))
    node("gone", cpu=(250, 0), memory=(GIB, 0), has_node=False)
    response, html = page(client, "/")
    overview = response.context["overview"]
    assert (overview.nodes, overview.missing_nodes) == (3, 1)
    html = squash(html)
    assert "<dt><a href=\"/nodes/\">Nodes</a></dt><dd>3</dd>" in html
    assert "<dt>Deleted, pods left</dt><dd>1</dd>" in html
    assert "2.2 / 8.0 cores <small>(28%)</small>" in html
    assert "3.0 / 16.0 GiB <small>(19%)</small>" in html
    assert html.count("<meter") == 2


# --- every page -----------------------------------------------------------------------------
def some_of_everything():
    node("n1", "region-1/zone-a", 0, pods=2)
    node("n2", "region-1/zone-b", 1, has_node=False, pods=1)
    pods("Assumed", 2, node="n1")
    pods("Added", 1, node="n2")
    pods("Pending", 2)
    SnapshotSample.objects.create(generation=3, cache_generation=3)
    ComparerRun.objects.create(clean=True, report={"clean": True})


@pytest.mark.parametrize("url, section", PAGES)
def test_an_htmx_request_gets_the_same_section_alone(client, owner, url, section):
    some_of_everything()
    owner(seq=5)
    _, whole = page(client, url)
    _, fragment = page(client, url, HTTP_HX_REQUEST="true")
    assert "<html" not in fragment
    assert fragment.strip().startswith(f'<section id="{section}"')
    assert fragment.strip() in whole


@pytest.mark.parametrize("url, _section", PAGES)
def test_pages_work_without_javascript(client, url, _section):
    """Every page links every other with plain links; none has a Refresh link: they are
    live, and a reload draws them anew."""
    some_of_everything()
    _, html = page(client, url + "?page=1")
    for other, _ in PAGES:
        assert f'href="{other}"' in html
    assert ">Refresh</a>" not in html


@pytest.mark.parametrize("who", ["viewer_client", "client"])
def test_an_unknown_path_is_our_404_page_in_debug_too(who, request, settings):
    """Django's DEBUG page listed the whole URLconf to anyone who mistyped a path."""
    settings.DEBUG = True
    response = request.getfixturevalue(who).get("/no-such-page/")
    html = response.content.decode()
    assert response.status_code == 404
    assert "There is no page at this address." in html
    assert "Using the URLconf" not in html and "Page not found at" not in html
    # A missing slash is still put right, and the API keeps its JSON.
    assert request.getfixturevalue(who).get("/nodes").status_code == 301
    assert request.getfixturevalue(who).get("/api/v1/nowhere").json()


def test_the_header_links_the_api_docs(viewer_client):
    assert 'href="/api/v1/docs"' in viewer_client.get("/nodes/").content.decode()
