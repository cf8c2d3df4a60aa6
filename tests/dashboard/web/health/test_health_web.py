"""The health on the web: the banner, the overview's panel and charts' data, the REST
endpoint, and the web process's probes and /metrics."""
import time
from datetime import datetime, timedelta, timezone as dt_timezone

import jsonschema_rs
import orjson
import pytest
from django.conf import settings
from django.core.cache import cache
from django.db import OperationalError, connections
from django.test import Client
from django.utils import timezone

from dashboard.models import HealthSample, Transition
from dashboard.readmodel import health
from dashboard.web.health import series as health_series
from dashboard.wire.clients import redis_client
from dashboard.wire.keys import OWNER_STATUS

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_judgement():
    """Pages share a judgement for two seconds (health.current): each test judges anew."""
    cache.delete(health.CURRENT_KEY)


@pytest.fixture
def no_owner(redis_url):
    redis_client(settings.REDIS_URL).delete(OWNER_STATUS)


def test_the_banner_names_the_problem_and_links_to_the_cause(viewer_client, no_owner):
    html = viewer_client.get("/nodes/").content.decode()
    banner = html.split('id="health-banner"')[1].split("</ul>")[0]
    assert 'hx-get="/health/banner/?seen=' in html and 'hx-trigger="every 5s"' in html
    assert 'data-level="fail"' in banner and 'data-check="owner"' in banner
    assert 'href="/#owner-status"' in banner


def test_a_banner_unchanged_since_the_page_drew_it_is_left_in_place(viewer_client, no_owner):
    """A 204 for the digest the page holds (htmx swaps nothing, so a click on the banner's
    link is never lost to a redraw); the banner anew once what it says changed."""
    html = viewer_client.get("/nodes/").content.decode()
    seen = html.split('hx-get="/health/banner/?seen=')[1].split('"')[0]
    assert viewer_client.get(f"/health/banner/?seen={seen}").status_code == 204
    cache.delete(health.CURRENT_KEY)
    redis_client(settings.REDIS_URL).set(OWNER_STATUS, orjson.dumps(
        {"synced": True, "pending": 0, "at": timezone.now().timestamp()}), ex=10)
    try:
        changed = viewer_client.get(f"/health/banner/?seen={seen}")
        assert changed.status_code == 200 and f"seen={seen}" not in changed.content.decode()
    finally:
        redis_client(settings.REDIS_URL).delete(OWNER_STATUS)


def test_pages_share_one_judgement_for_two_seconds(viewer_client, no_owner, monkeypatch):
    judged = []
    monkeypatch.setattr(health, "gather", lambda: judged.append(1) or health.Health((), 0))
    for _ in range(3):
        viewer_client.get("/health/banner/")
    assert len(judged) == 1


def test_the_banner_fragment_alone_and_empty_when_healthy(viewer_client, redis_url):
    redis = redis_client(settings.REDIS_URL)
    redis.set(OWNER_STATUS, orjson.dumps({"synced": True, "pending": 0,
                                          "at": timezone.now().timestamp()}), ex=10)
    HealthSample.objects.create(at=timezone.now(), period=10, level="ok")   # beat samples
    try:
        fragment = viewer_client.get("/health/banner/", HTTP_HX_REQUEST="true")
        text = fragment.content.decode().strip()
        assert text.startswith('<div id="health-banner"') and "<ul>" not in text
    finally:
        redis.delete(OWNER_STATUS)


def test_the_overview_leads_with_every_check(viewer_client, no_owner):
    html = viewer_client.get("/").content.decode()
    counts = html.split('<section id="counts">')[1]
    assert counts.lstrip().startswith('<section class="panel health-panel" id="health"')
    for name in ("owner", "scheduling", "binds_stuck", "comparer", "pools", "database"):
        assert f'data-check="{name}"' in counts
    # The charts: the library vendored (no CDN), our script, the picker's four ranges.
    assert 'src="/static/vendor/uplot/uPlot.iife.min.js"' in html
    assert 'data-series-url="/health/series/"' in html
    assert [b.split('"')[0] for b in html.split('data-range="')[2:]] == ["15m", "1h", "6h", "24h"]
    assert "<script>" not in html and " onclick=" not in html


def test_the_health_needs_a_login(client, no_owner):
    assert client.get("/health/banner/").status_code == 302
    assert client.get("/health/series/").status_code == 302
    assert client.get("/api/v1/health").status_code == 401


def test_the_api_answers_each_check(api_token, no_owner):
    response = Client().get("/api/v1/health", HTTP_AUTHORIZATION=f"Bearer {api_token}")
    assert response.status_code == 200
    body = response.json()
    assert body["level"] == "fail"
    owner = next(c for c in body["checks"] if c["name"] == "owner")
    assert owner["level"] == "fail" and owner["link"] == "/#owner-status"


def test_the_api_answers_the_feeds_lag_as_its_schema_says(api_token, redis_url):
    redis = redis_client(settings.REDIS_URL)
    redis.set(OWNER_STATUS, orjson.dumps({"synced": True, "at": time.time(),
                                          "feed_backlog": 12, "feed_lag": 6.5}), ex=10)
    try:
        api = Client(HTTP_AUTHORIZATION=f"Bearer {api_token}")
        response = api.get("/api/v1/health")
        schema = api.get("/api/v1/openapi.json").json()
    finally:
        redis.delete(OWNER_STATUS)
    body = response.json()
    assert body["feed"] == {"backlog": 12, "lag_seconds": 6.5}
    feed = next(c for c in body["checks"] if c["name"] == "feed")
    assert feed["level"] == "warn" and "6.5 s behind" in feed["message"]   # by its lag alone
    documented = schema["paths"]["/api/v1/health"]["get"]["responses"]["200"]
    validator = jsonschema_rs.validator_for(
        {**documented["content"]["application/json"]["schema"],
         "components": schema["components"]})
    assert [error.message for error in validator.iter_errors(body)] == []
    assert not validator.is_valid(dict(body, feed={"backlog": "many"}))


def test_the_api_answers_its_document_while_the_database_is_down(api_token, no_owner,
                                                                monkeypatch):
    # issue 22: during a clean database cut it was the middleware's bare {"error": ...}
    api = Client(HTTP_AUTHORIZATION=f"Bearer {api_token}")
    schema = api.get("/api/v1/openapi.json").json()

    def refused(*args, **kwargs):
        raise OperationalError('connection failed: connection to server at "10.1.2.3", '
                               'port 5432 failed: Connection refused')
    monkeypatch.setattr(type(connections["default"]), "ensure_connection", refused)
    response = api.get("/api/v1/health")
    assert response.status_code == 503 and response["Retry-After"]
    body = response.json()
    assert body["level"] == "fail" and body["feed"] == {"backlog": None, "lag_seconds": None}
    assert body["checks"] == [{"name": "database", "title": "Database", "level": "fail",
                               "message": "Database unreachable: Connection refused",
                               "link": ""}]
    documented = schema["paths"]["/api/v1/health"]["get"]["responses"]["503"]
    validator = jsonschema_rs.validator_for(
        {**documented["content"]["application/json"]["schema"],
         "components": schema["components"]})
    assert [error.message for error in validator.iter_errors(body)] == []
    # Only the health document: the rest of the API keeps its error shape.
    other = api.get("/api/v1/nodes")
    assert other.status_code == 503 and "error" in other.json()


def test_the_series_are_rates_and_levels_by_range(viewer_client):
    now = timezone.now()
    for i, (pending, binds, lag) in enumerate(((5, 20, 0.5), (None, 40, None))):
        HealthSample.objects.create(at=now - timedelta(seconds=20 - 10 * i), period=10,
                                    level="ok", pending=pending, binds=binds, feed_lag=lag)
    HealthSample.objects.create(at=now - timedelta(hours=2), period=10, level="ok", pending=1)
    body = viewer_client.get("/health/series/?range=15m").json()
    assert body["range"] == "15m" and len(body["times"]) == 2
    pods = {line["label"]: line["values"] for line in body["charts"]["pods"]["lines"]}
    assert pods["Pending"] == [5, None]           # unknown is a gap, not a zero
    rates = {line["label"]: line["values"] for line in body["charts"]["rates"]["lines"]}
    assert rates["Binds"] == [2.0, 4.0] and body["charts"]["rates"]["unit"] == "per second"
    assert body["charts"]["lag"]["unit"] == "seconds"
    assert body["charts"]["lag"]["lines"][0]["values"] == [0.5, None]
    longer = viewer_client.get("/health/series/?range=6h").json()["times"]
    assert longer[0] == pytest.approx((now - timedelta(hours=2)).timestamp())
    bad = viewer_client.get("/health/series/?range=1y")
    assert bad.status_code == 400 and "15m" in bad.json()["error"]


def test_long_ranges_are_summed_into_buckets():
    now = timezone.now()
    HealthSample.objects.bulk_create(
        HealthSample(at=now - timedelta(seconds=10 * i), period=10, level="ok", binds=10,
                     pending=i) for i in range(1, 1000))
    body = health_series.series("24h", now)
    assert len(body["times"]) <= health_series.MAX_POINTS
    rates = body["charts"]["rates"]["lines"][0]["values"]
    assert set(rates) == {1.0}    # ten binds each ten seconds, whatever the bucket


# --- the web's probes ------------------------------------------------------------------------
def test_liveness_and_readiness_need_no_login(client, redis_url):
    assert client.get("/healthz").json() == {"live": True}
    ready = client.get("/readyz")
    assert ready.status_code == 200 and ready.json() == {"ready": True}


def test_readiness_names_what_does_not_answer(client, redis_url, settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    ready = client.get("/readyz")
    assert ready.status_code == 503
    assert ready.json()["ready"] is False and "Error" in ready.json()["error"]


def test_the_webs_metrics_need_a_token(client, api_token):
    refused = client.get("/metrics")
    assert refused.status_code == 401 and refused["WWW-Authenticate"] == "Bearer"
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer sv_wrong").status_code == 401
    HealthSample.objects.create(at=timezone.now(), period=10, level="fail",
                                problems={"scheduling": "fail"})
    scraped = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {api_token}")
    assert scraped.status_code == 200
    text = scraped.content.decode()
    assert 'schedview_health_level{check="scheduling"} 2.0' in text
    assert 'schedview_health_level{check="owner"} 0.0' in text
    assert "process_cpu_seconds_total" in text or "python_info" in text


def test_a_points_transitions_are_one_events_window_away(viewer_client):
    """A burst of forgets on the rates chart links to the events behind it (issue 24): each
    point says where its span begins, and each counting line which events it counts."""
    now = timezone.now()
    for i in range(2):
        HealthSample.objects.create(at=now - timedelta(seconds=20 - 10 * i), period=10,
                                    level="ok", forgets=3 * i)
    body = viewer_client.get("/health/series/?range=15m").json()
    assert [end - start for start, end in zip(body["starts"], body["times"])] == [10, 10]
    events = {line["label"]: line["events"] for line in body["charts"]["rates"]["lines"]}
    assert events["Forgets"] == "kind=pod_forgotten"
    assert events["Expiries"] == "kind=pod_expired"
    assert all(not line["events"] for line in body["charts"]["pods"]["lines"])
    # The link the chart makes for the second point lists exactly that span's forgets.
    Transition.objects.create(seq=1, at=now - timedelta(seconds=15), kind="pod_forgotten",
                              key="u1", namespace="team", name="a", cause="operator")
    Transition.objects.create(seq=2, at=now - timedelta(seconds=25), kind="pod_forgotten",
                              key="u2", namespace="team", name="b", cause="operator")
    since = datetime.fromtimestamp(body["starts"][1], tz=dt_timezone.utc).isoformat()
    until = datetime.fromtimestamp(body["times"][1], tz=dt_timezone.utc).isoformat()
    page = viewer_client.get("/events/", {"kind": "pod_forgotten", "since": since,
                                          "until": until})
    assert [row.key for row in page.context["events"].rows] == ["u1"]


def test_a_points_window_reaches_back_to_a_transition_that_landed_late(viewer_client):
    """A forget stamped 2 s before its sample's period, written after the sample before
    (the owner's flush), is counted by this point: its window begins at that stamp, so the
    link lists it (the browser suite's chart test met it)."""
    now = timezone.now()
    stamped = now - timedelta(seconds=12)
    HealthSample.objects.create(at=now - timedelta(seconds=20), period=10, level="ok")
    HealthSample.objects.create(at=now, period=10, level="ok", forgets=1, counted_from=stamped)
    body = viewer_client.get("/health/series/?range=15m").json()
    assert body["starts"] == [round((now - timedelta(seconds=30)).timestamp(), 3),
                              round(stamped.timestamp(), 3)]
