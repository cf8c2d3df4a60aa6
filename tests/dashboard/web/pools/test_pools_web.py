"""The pools process on a simulated cluster, serving the REST API over the real Redis:
claims, backpressure, deadlines, refusals, status, the panel page and its socket."""
import threading
import time

import orjson
import pytest
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.conf import settings
from kubernetes import client

from simcluster import SimCluster
from simcluster.generate import generate_cluster
from simcluster.patch import MERGE
from warmpool.podstate import CLAIM_ANNOTATION, PHASE_LABEL

from dashboard.asgi import application
from dashboard.clients import pools_transport as transport
from dashboard.poolkeeper.runner import PoolsProcess
from dashboard.wire.clients import redis_client
from dashboard.wire.keys import EVENTS_GROUP, POOLS_GROUP, pool_claims, pool_reply
from dashboard.wire.live import events_message, pools_changed_message
from tests.waiting import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def nodes_only():
    return generate_cluster(nodes=3, pods=0, zones=1, seed=5, namespaces=1)


@pytest.fixture
def sim(nodes_only):
    with SimCluster(cluster=nodes_only, kubelet=False, namespaces=1,
                    pools={"web": 3, "tiny": 1}) as s:
        s.api.patch("pods", "warm-pools/tiny-0000", MERGE,          # tiny: its one pod busy
                    {"metadata": {"labels": {PHASE_LABEL: "Running"}}}, "test")
        yield s


@pytest.fixture
def redis(redis_url):
    r = redis_client(settings.REDIS_URL)
    for key in r.scan_iter("schedview:pools:*"):
        r.delete(key)
    return r


@pytest.fixture
def process(sim, redis):
    """`manage.py pools` in a thread: the same PoolsProcess, against the test's cluster."""
    proc = PoolsProcess(client.Configuration(host=sim.url), redis, capacity=2)
    stop = threading.Event()
    thread = threading.Thread(target=proc.run, args=(stop,), daemon=True)
    thread.start()
    wait_for(lambda: {pool: s["idle_ready"] for pool, s in (transport.read_status(redis) or {})
                      .get("pools", {}).items()} == {"web": 3, "tiny": 0}, 15, "the pools status")
    yield proc
    stop.set()
    thread.join(20)


def post_claim(http, token, pool="web", **body):
    return http.post(f"/api/v1/pools/{pool}/claims", orjson.dumps(body),
                     content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")


def test_a_claim_over_rest_returns_the_pod(process, sim, client, api_token):
    response = post_claim(client, api_token, images={"main": "nginx:1.27"},
                          labels={"team": "search"}, timeout=5)
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["pod"]["name"] == "web-0000" and body["pod"]["images"] == {"main": "nginx:1.27"}
    assert body["attempts"] == 1 and body["latency_ms"] >= 0
    pod = sim.pod("warm-pools", "web-0000")
    assert pod["metadata"]["labels"][PHASE_LABEL] == "Running"
    assert pod["metadata"]["annotations"][CLAIM_ANNOTATION] == body["pod"]["annotations"][
        CLAIM_ANNOTATION]


def test_no_idle_pod_in_time_is_504_with_a_clear_body(process, client, api_token):
    response = post_claim(client, api_token, pool="tiny", timeout=0.5)
    assert response.status_code == 504
    assert response.json()["error"].startswith("no idle pod of pool 'tiny' could be claimed")


def test_a_full_queue_is_429_with_retry_after(process, client, api_token, redis):
    waiting = [threading.Thread(target=post_claim, args=(client, api_token, "tiny"),
                                kwargs={"timeout": 3}) for _ in range(2)]
    for t in waiting:
        t.start()
    wait_for(lambda: transport.read_status(redis)["pools"]["tiny"]["queue_length"] == 2, 10,
             "two queued claims")
    started = time.monotonic()
    response = post_claim(client, api_token, pool="tiny", timeout=3)
    assert response.status_code == 429 and response["Retry-After"] == "1"
    assert time.monotonic() - started < 1          # refused at once, not after the timeout
    assert "try again later" in response.json()["error"]
    for t in waiting:
        t.join(10)


def test_the_scheduler_refuses_what_its_full_queue_cannot_take(process, redis):
    """Past the web's check (two requests racing it), the pools process answers 429 at once."""
    scheduler = process.feed.schedulers["tiny"]
    for i in range(3):
        redis.rpush(pool_claims("tiny"), orjson.dumps(
            {"id": f"r{i}", "pool": "tiny", "options": {}, "deadline": time.time() + 5,
             "actor": "t"}))
    reply = redis.blpop([pool_reply("r2")], timeout=5)
    assert orjson.loads(reply[1])["status"] == 429
    assert scheduler.metrics.refused == 1


@pytest.mark.parametrize("body, message", [
    ({"labels": {"bad key!": "x"}}, "not a valid key"),
    ({"images": {"main": ""}}, "no image"),
    ({"timeout": 0}, "timeout"),
    ({"target_phase": "Idle"}, "target_phase"),
])
def test_bad_claims_are_400_and_queue_nothing(process, client, api_token, redis, body, message):
    response = post_claim(client, api_token, **body)
    assert response.status_code == 400 and message in response.json()["error"]
    assert redis.llen(pool_claims("web")) == 0
    assert transport.read_status(redis)["pools"]["web"]["metrics"]["outcomes"]["success"] == 0


def test_claims_need_the_act_permission(process, viewer_client):
    response = viewer_client.post("/api/v1/pools/web/claims", {}, content_type="application/json")
    assert response.status_code == 403


def test_unknown_pool_is_404(process, client, api_token):
    assert post_claim(client, api_token, pool="nope").status_code == 404
    assert client.get("/api/v1/pools/nope", HTTP_AUTHORIZATION=f"Bearer {api_token}"
                      ).status_code == 404


def test_without_the_pools_process_claims_and_status_are_503(redis, client, api_token):
    assert post_claim(client, api_token).status_code == 503
    response = client.get("/api/v1/pools", HTTP_AUTHORIZATION=f"Bearer {api_token}")
    assert response.status_code == 503 and "manage.py pools" in response.json()["error"]


def test_pool_status_over_rest(process, client, api_token):
    assert post_claim(client, api_token).status_code == 200
    wait_for(lambda: client.get("/api/v1/pools/web", HTTP_AUTHORIZATION=f"Bearer {api_token}"
                                ).json()["reservations"], 5, "the reservation in the status")
    pools = client.get("/api/v1/pools", HTTP_AUTHORIZATION=f"Bearer {api_token}").json()
    assert [p["pool"] for p in pools] == ["tiny", "web"]
    web = pools[1]
    assert web["metrics"]["outcomes"]["success"] == 1 and web["last_dispatch_ago"] is not None
    assert web["reservations"][0]["key"] == "warm-pools/web-0000"


def test_shutdown_fails_waiting_claims_with_no_idle_pods(process, client, api_token):
    replies = []
    waiting = threading.Thread(target=lambda: replies.append(
        post_claim(client, api_token, pool="tiny", timeout=10)))
    waiting.start()
    wait_for(lambda: process.feed.schedulers["tiny"].status()["queue_length"] == 1, 10,
             "the queued claim")
    process.shutdown()
    waiting.join(10)
    assert replies[0].status_code == 503
    assert replies[0].json() == {"error": "pool 'tiny' is shutting down: no idle pods"}


def test_the_panel_page_shows_queue_reservations_and_histogram(process, viewer_client,
                                                              client, api_token):
    assert post_claim(client, api_token).status_code == 200
    html = wait_for(lambda: (lambda page: 'class="countdown"' in page and page)(
        viewer_client.get("/pools/").content.decode()), 5, "the reservation on the panel")
    assert 'ws-connect="/ws/pools/"' in html and '<section id="pools-panel">' in html
    assert "<svg" in html and "<title>≤" in html             # the latency histogram
    assert "<code>warm-pools/web-0000</code> <span" in html  # reserved, counting down
    assert "<li><code>warm-pools/web-0001</code></li>" in html   # the ready queue's head


def test_the_panel_without_the_process_says_so(redis, viewer_client):
    html = viewer_client.get("/pools/").content.decode()
    assert "is not running" in html
    assert "No live owner" in html and "Redis unreachable" not in html   # the header's badge


@pytest.mark.asyncio
async def test_the_panel_socket_pushes_when_the_pools_change(redis_url, ws_headers):
    communicator = WebsocketCommunicator(application, "/ws/pools/", headers=ws_headers)
    connected, _ = await communicator.connect()
    assert connected
    layer = get_channel_layer()
    try:
        await communicator.receive_from(timeout=10)              # the push after a connect
        await layer.group_send(EVENTS_GROUP, events_message([], {}))
        assert await communicator.receive_nothing(timeout=0.6)   # the owner's flushes: not ours
        await layer.group_send(POOLS_GROUP, pools_changed_message())
        html = await communicator.receive_from(timeout=10)
        assert html.lstrip().startswith('<section id="pools-panel">')
    finally:
        await communicator.disconnect()
        await layer.close_pools()
