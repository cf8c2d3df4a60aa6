"""The web process's hub, over the real Redis channel layer: the owner's group has one
member however many sockets are open, and sockets showing the same pod share one render."""

import asyncio

import pytest
import pytest_asyncio
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer

from dashboard.web.live import hub as live_hub
from dashboard.web.live.nudge import NUDGE
from dashboard.web.pods.consumers import PodDetailConsumer
from dashboard.wire.keys import EVENTS_GROUP
from dashboard.wire.live import events_message
from tests.dashboard.web.pods.podpages import connect, pod, transition
from tests.waiting import wait_for_async

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


def flush(kind, key, seq):
    return events_message([{"seq": seq, "kind": kind, "key": key, "namespace": "default"}], {})


async def confirm(layer, uid):
    """The pod's confirmation: its Transition row, then the flush that announces it."""
    seq = (await database_sync_to_async(transition)(uid, "pod_confirmed", "Assumed",
                                                     "Added")).seq
    await layer.group_send(EVENTS_GROUP, flush("pod_confirmed", uid, seq))


async def group_members(layer) -> int:
    """How many channels the layer delivers the owner's group to (its Redis sorted set)."""
    connection = layer.connection(layer.consistent_hash(EVENTS_GROUP))
    return await connection.zcard(layer._group_key(EVENTS_GROUP))


@pytest_asyncio.fixture
async def layer(redis_url):
    layer = get_channel_layer()
    await layer.group_discard(EVENTS_GROUP, "nobody")   # the layer's connection, opened
    yield layer
    await layer.close_pools()


@pytest.fixture
def renders(monkeypatch):
    """Counts PodDetailConsumer renders."""
    counted = []
    original = PodDetailConsumer.render

    def render(self):
        counted.append(self.uid)
        return original(self)
    monkeypatch.setattr(PodDetailConsumer, "render", render)
    return counted


async def test_one_member_and_one_render_serve_every_socket_of_a_pod(layer, ws_headers,
                                                                     renders):
    await database_sync_to_async(pod)("p1", "Assumed", node="n1")
    before = await group_members(layer)
    sockets = [await connect("/ws/pods/p1/", ws_headers) for _ in range(12)]
    try:
        assert await group_members(layer) == before + 1
        renders.clear()
        await confirm(layer, "p1")
        pushed = [await socket.receive_from(timeout=10) for socket in sockets]
        assert len(set(pushed)) == 1 and "confirmed by the watch" in pushed[0]
        assert renders == ["p1"], "each socket rendered the pod itself"
    finally:
        for socket in sockets:
            await socket.disconnect()
    await wait_for_async(lambda: members_are(layer, before), 10,
                         "the last socket's leaving to take the process out of the group")


async def members_are(layer, count) -> bool:
    return await group_members(layer) == count


async def test_sockets_of_different_pods_are_rendered_apart(layer, ws_headers, renders):
    for uid in ("a", "b"):
        await database_sync_to_async(pod)(uid, "Assumed", node="n1")
    first = await connect("/ws/pods/a/", ws_headers)
    second = await connect("/ws/pods/b/", ws_headers)
    try:
        renders.clear()
        await confirm(layer, "b")
        assert "confirmed by the watch" in await second.receive_from(timeout=10)
        # a's page hears only that its diagnosis may have moved, rendered by its own socket
        assert await first.receive_from(timeout=10) == NUDGE
        assert await first.receive_nothing(timeout=live_hub.PUSH_INTERVAL * 3)
        assert sorted(renders) == ["a", "b"]
    finally:
        await first.disconnect()
        await second.disconnect()


async def test_a_socket_that_leaves_keeps_the_others_pushed(layer, ws_headers):
    await database_sync_to_async(pod)("p1", "Assumed", node="n1")
    leaving = await connect("/ws/pods/p1/", ws_headers)
    staying = await connect("/ws/pods/p1/", ws_headers)
    try:
        await leaving.disconnect()
        await confirm(layer, "p1")
        assert "confirmed by the watch" in await staying.receive_from(timeout=10)
    finally:
        await staying.disconnect()


async def test_a_quiet_group_keeps_the_sockets_served(layer, ws_headers):
    """No message for longer than the layer's blocking receive (an owner gone a while):
    the hub still hands the next one on."""
    await database_sync_to_async(pod)("p1", "Assumed", node="n1")
    socket = await connect("/ws/pods/p1/", ws_headers)
    try:
        assert await socket.receive_nothing(timeout=layer.brpop_timeout + 2)
        await confirm(layer, "p1")
        assert "confirmed by the watch" in await socket.receive_from(timeout=10)
    finally:
        await socket.disconnect()


class SwallowingLayer:
    """A channel layer whose blocking receive turns its cancellation into an error, as
    redis-py's blocking reads have (its issue 2028)."""

    def __init__(self):
        self.receives = 0

    async def new_channel(self):
        return "specific.test!one"

    async def group_add(self, group, channel):
        pass

    async def group_discard(self, group, channel):
        pass

    async def receive(self, channel):
        self.receives += 1
        try:
            await asyncio.Event().wait()      # nothing ever comes
        except asyncio.CancelledError:
            raise ConnectionError("Connection closed by server.") from None


class Socket:
    def shared_key(self):
        return "one"


async def test_a_listener_stops_though_the_layer_swallows_its_cancellation(monkeypatch):
    monkeypatch.setattr(live_hub, "RETRY_PERIOD", 0.0)
    hub = live_hub.Hub(SwallowingLayer(), "g")
    socket = Socket()
    fragment = await hub.join(socket)
    listener = hub._listener
    await hub.leave(socket, fragment)
    await asyncio.wait({listener}, timeout=5)    # else it receives again, for ever
    assert listener.cancelled() and hub.layer.receives == 1
