"""The overview is live: the owner's flushes reach a connected browser as the counts
section, re-rendered from the read model and coalesced, over the real Redis channel layer."""
import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator

from dashboard.asgi import application
from dashboard.models import PodRecord
from dashboard.web.live.hub import PUSH_INTERVAL
from dashboard.wire.keys import EVENTS_GROUP
from dashboard.wire.live import events_message

pytestmark = pytest.mark.django_db(transaction=True)

ORIGIN = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")]


def flush_message(seq):
    return events_message([{"seq": seq, "kind": "pod_added", "key": f"uid-{seq}"}], {})


@database_sync_to_async
def pods(count, state="Added"):
    PodRecord.objects.bulk_create(
        PodRecord(uid=f"{state}-{i}", namespace="ns", name=f"{state.lower()}-{i}", state=state)
        for i in range(count))


async def connected(headers):
    communicator = WebsocketCommunicator(application, "/ws/overview/", headers=headers)
    connected, _ = await communicator.connect()
    assert connected
    return communicator


@pytest.mark.asyncio
async def test_a_burst_of_flushes_arrives_coalesced_and_fresh(redis_url, ws_headers):
    """Five flushes at once: one push at once (the first flush), at most one more at the
    end of the window (the rest), then silence."""
    await pods(3)
    communicator = await connected(ws_headers)
    layer = get_channel_layer()
    try:
        first = await communicator.receive_from(timeout=10)   # the push that follows a connect
        assert '<dd>3</dd>' in first
        for seq in range(5):
            await layer.group_send(EVENTS_GROUP, flush_message(seq))
        html = await communicator.receive_from(timeout=10)
        assert html.lstrip().startswith('<section id="counts">')
        assert '<dd>3</dd>' in html                          # the three Added pods
        if not await communicator.receive_nothing(timeout=PUSH_INTERVAL * 2):
            await communicator.receive_from(timeout=1)       # the window's trailing push
            assert await communicator.receive_nothing(timeout=PUSH_INTERVAL * 2)
        await pods(4, state="Assumed")
        await layer.group_send(EVENTS_GROUP, flush_message(6))
        html = await communicator.receive_from(timeout=10)
        assert '?state=Assumed">Assumed</a></dt><dd>4</dd>' in html
    finally:
        await communicator.disconnect()
        await layer.close_pools()


@pytest.mark.asyncio
async def test_a_foreign_origin_is_refused(redis_url):
    communicator = WebsocketCommunicator(application, "/ws/overview/",
                                         headers=[(b"origin", b"http://evil.example")])
    connected, _ = await communicator.connect()
    assert not connected


@pytest.mark.asyncio
async def test_an_anonymous_socket_is_closed(redis_url):
    communicator = WebsocketCommunicator(application, "/ws/overview/", headers=ORIGIN)
    connected, code = await communicator.connect()
    assert (connected, code) == (False, 4401)


def test_the_overview_page_connects_its_counts_to_the_socket(viewer_client):
    html = viewer_client.get("/").content.decode()
    assert 'ws-connect="/ws/overview/"' in html
    assert "hx-ws" in html or "ext/ws" in html or "ws-2" in html
