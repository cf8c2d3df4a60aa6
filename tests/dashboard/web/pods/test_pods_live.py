"""The pods pages, live over the real Redis channel layer: the list's rows for its filters,
and one pod's state, diagram and timeline, pushed only after flushes that concern them."""
import pytest
import pytest_asyncio
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator

from dashboard.asgi import application
from dashboard.models import PodRecord
from dashboard.web.live.hub import PUSH_INTERVAL
from dashboard.web.live.nudge import NUDGE
from dashboard.web.pods.consumers import BAD_FILTER
from dashboard.wire.keys import EVENTS_GROUP
from dashboard.wire.live import events_message
from tests.dashboard.web.pods.podpages import connect, pod, transition

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

QUIET = PUSH_INTERVAL * 3   # long enough for a push that was coming to come


def flush(*events):
    """A flush of (kind, key, namespace, seq) events, seq that of its Transition row."""
    return events_message([{"seq": seq, "kind": kind, "key": key, "namespace": namespace}
                           for kind, key, namespace, seq in events], {})


@pytest_asyncio.fixture
async def layer(redis_url):
    layer = get_channel_layer()
    yield layer
    await layer.close_pools()


async def test_the_list_pushes_its_page_of_rows_after_pod_events(layer, ws_headers):
    await database_sync_to_async(pod)("a", "Added", namespace="team")
    await database_sync_to_async(pod)("b", "Assumed", namespace="team")
    await database_sync_to_async(pod)("c", "Assumed", namespace="other")
    listing = await connect("/ws/pods/?state=Assumed&namespace=team", ws_headers)
    try:
        await layer.group_send(EVENTS_GROUP, flush(("node_updated", "n1", "", 1)))
        await layer.group_send(EVENTS_GROUP, flush(("pod_added", "x", "other", 2)))
        assert await listing.receive_nothing(timeout=QUIET), "pushed for events elsewhere"

        @database_sync_to_async
        def assumed():
            PodRecord.objects.filter(uid="a").update(state="Assumed")
            return transition("a", "pod_assumed", "Initial", "Assumed", namespace="team").seq
        seq = await assumed()
        await layer.group_send(EVENTS_GROUP, flush(("pod_assumed", "a", "team", seq)))
        html = await listing.receive_from(timeout=10)
        assert html.lstrip().startswith('<div id="pod-rows">')
        assert '<tr id="pod-a"' in html and '<tr id="pod-b"' in html
        assert '<tr id="pod-c"' not in html and "<h2>2 Assumed pods matching</h2>" in html
    finally:
        await listing.disconnect()


async def test_the_detail_pushes_its_pod_only(layer, ws_headers):
    """Another pod's event is only a nudge (its diagnosis may move), never the pod's state."""
    await database_sync_to_async(pod)("p1", "Assumed", node="n1")
    seq = (await database_sync_to_async(transition)("p1", "pod_assumed", "Initial",
                                                     "Assumed")).seq
    detail = await connect("/ws/pods/p1/", ws_headers)
    try:
        await layer.group_send(EVENTS_GROUP, flush(("pod_added", "p2", "default", seq)))
        assert await detail.receive_from(timeout=10) == NUDGE, "pushed for another pod"

        @database_sync_to_async
        def confirmed():
            PodRecord.objects.filter(uid="p1").update(state="Added")
            transition("p1", "pod_confirmed", "Assumed", "Added")
        await confirmed()
        await layer.group_send(EVENTS_GROUP, flush(("pod_confirmed", "p1", "default", seq + 1)))
        html = await detail.receive_from(timeout=10)
        assert html.lstrip().startswith('<section id="pod-live">')
        assert '<strong id="pod-state" data-state="Added"' in html
        assert '<g class="edge taken" data-edge="Assumed-Added">' in html
        assert "confirmed by the watch" in html
    finally:
        await detail.disconnect()


async def test_bad_filters_and_anonymous_sockets_are_refused(redis_url, ws_headers):
    refused = WebsocketCommunicator(application, "/ws/pods/?state=Running", headers=ws_headers)
    assert (await refused.connect())[0]
    assert await refused.receive_output(timeout=5) == {"type": "websocket.close",
                                                       "code": BAD_FILTER}
    await refused.disconnect()
    anonymous = WebsocketCommunicator(application, "/ws/pods/p1/", headers=ws_headers[:2])
    connected, code = await anonymous.connect()
    assert not connected and code == 4401
    await anonymous.wait()
