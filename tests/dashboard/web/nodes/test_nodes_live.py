"""Nodes, a node, the zones and the snapshot pages, live over the real Redis channel layer:
each pushes what changed for it, and stays quiet for flushes that do not concern it."""
import re

import pytest
from channels.db import database_sync_to_async
from django.conf import settings

from dashboard.models import NodeRecord
from dashboard.owner.commands import CommandServer
from dashboard.readmodel import read_model
from dashboard.web.live.consumers import BAD_INPUT
from dashboard.wire.clients import redis_client
from dashboard.wire.keys import OWNER_COMMANDS, OWNER_STATUS
from tests.dashboard.web.nodes.nodepages import (
    T0,
    WAIT,
    event,
    flush,
    node,
    refused,
    report_owner,
    sample,
    socket,
)

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def no_owner_left(redis_url):
    """The owner's status some tests write must not outlive them."""
    yield
    redis_client(settings.REDIS_URL).delete(OWNER_STATUS)


@database_sync_to_async
def nodes(*names, **fields):
    for name in names:
        node(name, **fields)


@database_sync_to_async
def set_generation(name, generation):
    NodeRecord.objects.filter(name=name).update(generation=generation)


@pytest.mark.asyncio
async def test_the_table_gets_the_rows_of_its_pages_changed_nodes(redis_url, ws_headers,
                                                                 monkeypatch):
    monkeypatch.setattr(read_model, "NODES_PER_PAGE", 2)
    await nodes("n1", "n2", "n3")
    async with socket("/ws/nodes/?page=1", ws_headers) as ws:
        await set_generation("n2", 77)
        await flush([event(1, node="n2"), event(2, node="n3")])   # n3 is on page 2
        html = await ws.receive_from(timeout=WAIT)
        assert html.strip().startswith('<tr id="node-n2">')
        assert '<td class="num">77</td>' in html and "node-n3" not in html and "node-n1" not in html
        await flush([event(3, node="n3")])                         # not this page's
        assert await ws.receive_nothing(timeout=1.0)


@pytest.mark.asyncio
async def test_a_node_coming_or_going_redraws_the_tables_body(redis_url, ws_headers):
    await nodes("n1")
    async with socket("/ws/nodes/", ws_headers) as ws:
        await nodes("n2")
        await flush([event(1, "node_added", key="n2", node="")])
        html = await ws.receive_from(timeout=WAIT)
        assert html.strip().startswith('<div id="node-table-body">')
        assert "<h2>2 nodes</h2>" in html and 'id="node-n2"' in html


@pytest.mark.asyncio
async def test_a_nodes_page_follows_that_node_only(redis_url, ws_headers):
    await nodes("n1", "n2")
    async with socket("/ws/nodes/n1/", ws_headers) as ws:
        await flush([event(1, node="n2"), event(2, "node_updated", key="n2", node="")])
        assert await ws.receive_nothing(timeout=1.0)
        await set_generation("n1", 99)
        await flush([event(3, "node_updated", key="n1", node="")])
        html = await ws.receive_from(timeout=WAIT)
        assert html.strip().startswith('<section id="node-live">')
        assert "<dt>Generation</dt><dd>99" in html


@pytest.mark.asyncio
async def test_bad_sockets_are_refused(redis_url, ws_headers):
    for path in ["/ws/nodes/?page=0", "/ws/nodes/?page=x", "/ws/nodes/Bad_Name!/"]:
        assert await refused(path, ws_headers) == BAD_INPUT, path


@pytest.mark.asyncio
async def test_the_zone_tree_follows_the_round_robin_and_the_nodes(redis_url, ws_headers):
    await nodes("a0", zone="region-1/a")
    await database_sync_to_async(report_owner)(
        round_robin={"zone_index": 0, "zones": [["region-1/a", 0]]})
    async with socket("/ws/zones/", ws_headers) as ws:
        moved = {"round_robin": {"zone_index": 1, "zones": [["region-1/a", 1]]}}
        await flush([], status=moved)              # placement moved it: no cache event
        html = await ws.receive_from(timeout=WAIT)
        assert html.strip().startswith('<section id="zone-groups">')
        await flush([event(1, "snapshot_updated")], status=moved)   # nothing moved
        assert await ws.receive_nothing(timeout=1.0)


@pytest.mark.asyncio
async def test_the_snapshot_page_follows_snapshots(redis_url, ws_headers):
    await database_sync_to_async(sample)(3, T0)
    async with socket("/ws/snapshot/", ws_headers) as ws:
        await database_sync_to_async(sample)(8, T0.replace(minute=1), changed=["n9"])
        await flush([event(1, "snapshot_updated", key="", node="", generation=8)])
        html = await ws.receive_from(timeout=WAIT)
        assert html.strip().startswith('<section id="snapshot-live">')
        assert "Generation 8" in html and "/nodes/n9/" in html


@pytest.mark.asyncio
async def test_the_live_pages_need_a_login(redis_url, ws_headers):
    anonymous = [header for header in ws_headers if header[0] != b"cookie"]
    for path in ["/ws/nodes/", "/ws/nodes/n1/", "/ws/zones/", "/ws/snapshot/"]:
        assert await refused(path, anonymous) == 4401, path


@pytest.mark.asyncio
async def test_a_nodes_images_are_asked_again_only_when_the_node_changes(redis_url, ws_headers,
                                                                         served):
    """Pods coming and going do not change a node's images: the owner is not asked again."""
    asked = []
    server = CommandServer({"get_node": lambda args, actor: asked.append(args) or {
        "name": "n1", "generation": 1, "images": [["example.com/web:1", 2**20, 1]]}},
        client=redis_client(settings.REDIS_URL))
    served(lambda: server.serve(timeout=0.05))
    await nodes("n1", images=1)
    await database_sync_to_async(report_owner)()
    try:
        async with socket("/ws/nodes/n1/", ws_headers) as ws:
            for seq in (1, 2):
                await flush([event(seq, node="n1")])
                assert "example.com/web:1" in await ws.receive_from(timeout=WAIT)
            assert len(asked) == 1
            await flush([event(3, "node_updated", key="n1", node="")])
            assert "example.com/web:1" in await ws.receive_from(timeout=WAIT)
            assert len(asked) == 2
    finally:
        redis_client(settings.REDIS_URL).delete(OWNER_COMMANDS)


@database_sync_to_async
def set_cpu_use(name, percent):
    NodeRecord.objects.filter(name=name).update(cpu_percent=percent)


@pytest.mark.asyncio
async def test_the_heat_map_gets_the_cells_that_moved_and_its_legend(redis_url, ws_headers):
    await nodes("n1", "n2", cpu_percent=10.0)
    async with socket("/ws/heatmap/?metric=cpu", ws_headers) as ws:
        await set_cpu_use("n2", 99.0)
        await flush([event(1, node="n2")])
        html = await ws.receive_from(timeout=WAIT)
        assert html.strip().startswith('<ul id="heat-legend"')
        assert re.findall(r'<a id="heat-([^"]+)" class="h-([^"]+)"', html) == [("n2", "9")]
        await nodes("n3")
        await flush([event(2, "node_added", key="n3", node="")])
        html = await ws.receive_from(timeout=WAIT)
        assert html.strip().startswith('<div id="heat-body">') and 'id="heat-n3"' in html
    assert await refused("/ws/heatmap/?metric=disk", ws_headers) == BAD_INPUT


@pytest.mark.asyncio
async def test_the_headers_sequence_number_follows_the_owner(redis_url, ws_headers):
    await database_sync_to_async(report_owner)(seq=41)
    async with socket("/ws/header/", ws_headers) as ws:
        await database_sync_to_async(report_owner)(seq=42)
        await flush([event(42)])
        html = await ws.receive_from(timeout=WAIT)
        assert html.strip().startswith('<p class="source" id="owner-source">')
        assert "seq 42" in html
