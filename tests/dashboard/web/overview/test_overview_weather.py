"""Under `manage.py up` the simulated cluster's fault episodes are announced: on the
overview always (on, settling, or calm with the next one), and on every page's banner
while one is on."""
import re
import time

import jsonschema_rs
import orjson
import pytest
from django.conf import settings
from django.core.cache import cache
from django.test import Client

from dashboard.wire.clients import redis_client
from dashboard.wire.keys import SIMCLUSTER_WEATHER
from tests.dashboard.web.nodes.nodepages import get, squash

pytestmark = pytest.mark.django_db


@pytest.fixture
def publish(redis_url):
    """Publish a weather state as `up`'s announcer does; gone afterwards."""
    client = redis_client(settings.REDIS_URL)

    def published(now=None, last=None, next_in=100):
        client.set(SIMCLUSTER_WEATHER, orjson.dumps({
            "episodes": ["failing-binds", "lost-events"], "calm": 180.0, "length": 60.0,
            "now": now, "last": last,
            "next": {"name": "lost-events", "title": "Lost watch events",
                     "at": time.time() + next_in}}))
        cache.clear()    # the health a process's pages share for 2 s
    yield published
    client.delete(SIMCLUSTER_WEATHER)
    cache.clear()


def test_nothing_is_announced_outside_up(viewer_client, publish):
    _, html = get(viewer_client, "/")
    assert 'id="injected"' not in html and 'class="injected"' not in html


def test_an_episode_on_is_announced_on_the_overview_and_every_banner(viewer_client, publish):
    publish(now={"name": "failing-binds", "title": "Failing binds",
                 "what": "30% of Bindings are answered 500", "since": time.time() - 10,
                 "until": time.time() + 50})
    _, html = get(viewer_client, "/nodes/")
    banner = squash(html.split('id="health-banner"')[1].split("</div>\n</div>")[0])
    assert "The simulated cluster is injecting <strong>failing binds</strong> until" in banner
    assert "30% of Bindings are answered 500" in banner
    _, html = get(viewer_client, "/")
    panel = squash(html.split('<section class="panel weather" id="injected">')[1]
                   .split("</section>")[0])
    assert "injecting <strong>failing binds</strong>" in panel
    assert "Next: lost watch events at <time" in panel


def test_calm_says_so_and_a_recent_end_says_its_warnings_settle(viewer_client, publish):
    publish(last={"name": "failing-binds", "title": "Failing binds", "ended": time.time() - 5})
    _, html = get(viewer_client, "/")
    assert "Settling" in html and "when failing binds ended" in html
    assert 'class="injected"' not in html
    publish(last={"name": "failing-binds", "title": "Failing binds",
                  "ended": time.time() - 3600})
    _, html = get(viewer_client, "/")
    assert "No fault injected now: every warning you see has another cause." in html


def test_the_health_api_names_the_episode_as_its_schema_says(api_token, publish):
    api = Client(HTTP_AUTHORIZATION=f"Bearer {api_token}")
    assert api.get("/api/v1/health").json()["injected"] is None     # nothing published
    publish(now={"name": "failing-binds", "title": "Failing binds",
                 "what": "30% of Bindings are answered 500", "since": time.time() - 10,
                 "until": time.time() + 50})
    body = api.get("/api/v1/health").json()
    assert body["injected"]["now"]["name"] == "failing-binds"
    assert body["injected"]["now"]["until"] > time.time()
    assert body["injected"]["next"]["name"] == "lost-events"
    schema = api.get("/api/v1/openapi.json").json()
    documented = schema["paths"]["/api/v1/health"]["get"]["responses"]["200"]
    validator = jsonschema_rs.validator_for(
        {**documented["content"]["application/json"]["schema"],
         "components": schema["components"]})
    assert [error.message for error in validator.iter_errors(body)] == []


@pytest.mark.parametrize("played, finished, speed, says", [
    (300, None, 2.0, "Playing demo.jsonl.gz: event 300 of 1,200, recorded <time"),
    (1200, 1_000_500.0, 0.0, "Played All 1,200 events of demo.jsonl.gz, by <time"),
], ids=["playing", "played"])
def test_a_replay_is_announced_with_its_position_and_speed(viewer_client, redis_url, played,
                                                           finished, speed, says):
    client = redis_client(settings.REDIS_URL)
    client.set(SIMCLUSTER_WEATHER, orjson.dumps({
        "episodes": [], "calm": 240.0, "length": 60.0, "now": None, "next": None, "last": None,
        "replay": {"source": "demo.jsonl.gz", "events": 1200, "played": played,
                   "recorded_at": 1_000_000.0, "speed": speed, "reschedule": False,
                   "finished_at": finished}}))
    cache.clear()
    try:
        _, html = get(viewer_client, "/")
    finally:
        client.delete(SIMCLUSTER_WEATHER)
        cache.clear()
    panel = squash(html.split('<section class="panel replay" id="replay"')[1]
                   .split("</section>")[0])
    text = re.sub(r"</?(strong|span)[^>]*>", "", panel)
    assert says in text
    assert ("at 2&times; the recorded pace" if speed else "as fast as the cluster takes them") \
        in text
    assert "Its bindings are kept as recorded." in text
    assert 'id="injected"' not in html      # no episodes: no fault panel
