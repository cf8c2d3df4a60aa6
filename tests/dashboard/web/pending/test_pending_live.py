"""The Pending page's and a pod page's sockets over the real Redis channel layer: a pending
pod that comes or goes, or a node that changes, nudges the page to ask again; flushes that
move nothing they show say nothing."""
import pytest
import pytest_asyncio
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer

from dashboard.web.live.hub import PUSH_INTERVAL
from dashboard.web.live.nudge import NUDGE
from dashboard.wire.keys import EVENTS_GROUP
from dashboard.wire.live import events_message
from tests.dashboard.web.pods.podpages import connect, pod

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

QUIET = PUSH_INTERVAL * 3   # long enough for a push that was coming to come


def flush(pending_changes, *events):
    """A flush whose status counts `pending_changes`, with (kind, key) events."""
    return events_message([{"seq": 1, "kind": kind, "key": key, "node": key}
                           for kind, key in events],
                          {"pending_changes": pending_changes, "pending_sweeps": 0})


@pytest_asyncio.fixture
async def layer(redis_url):
    layer = get_channel_layer()
    yield layer
    await layer.close_pools()


async def test_the_pending_page_is_nudged_when_a_pending_pod_comes_or_is_assumed(layer,
                                                                                  ws_headers):
    page = await connect("/ws/pending/", ws_headers)
    try:
        await layer.group_send(EVENTS_GROUP, flush(1))                     # the baseline
        await layer.group_send(EVENTS_GROUP, flush(1, ("node_updated", "n1")))
        assert await page.receive_nothing(timeout=QUIET), "nudged for a node alone"
        await layer.group_send(EVENTS_GROUP, flush(2))                     # a pod came
        assert await page.receive_from(timeout=10) == NUDGE
    finally:
        await page.disconnect()
    assigned = await connect("/ws/pending/", ws_headers)
    try:
        await layer.group_send(EVENTS_GROUP, flush(2, ("pod_assumed", "p1")))
        assert await assigned.receive_from(timeout=10) == NUDGE
    finally:
        await assigned.disconnect()


@pytest.mark.parametrize("change", [
    flush(1, ("node_updated", "n1")),    # a node moved: what is free where
    flush(2),                            # a pending pod moved (this one, or a rival)
])
async def test_a_pending_pods_page_is_nudged_when_its_diagnosis_may_move(layer, ws_headers,
                                                                          change):
    await database_sync_to_async(pod)("p1", "Pending")
    page = await connect("/ws/pods/p1/", ws_headers)
    try:
        await layer.group_send(EVENTS_GROUP, flush(1))                     # the baseline
        assert await page.receive_nothing(timeout=QUIET), "nudged for nothing"
        await layer.group_send(EVENTS_GROUP, change)
        assert await page.receive_from(timeout=10) == NUDGE
    finally:
        await page.disconnect()


async def test_anonymous_pending_sockets_are_refused(redis_url, ws_headers):
    from channels.testing import WebsocketCommunicator

    from dashboard.asgi import application
    anonymous = WebsocketCommunicator(application, "/ws/pending/", headers=ws_headers[:2])
    connected, code = await anonymous.connect()
    assert not connected and code == 4401
    await anonymous.wait()
