"""The events page follows the stream over the real Redis channel layer without gaps: it
says where it stands, gets what the history holds after that, then the owner's pushes;
a lost flush is filled from the history, and bad input changes nothing."""
import pytest
from channels.db import database_sync_to_async

from dashboard.web.events import reads as event_reads
from dashboard.web.live.consumers import BAD_INPUT
from tests.dashboard.web.nodes.nodepages import WAIT, event, flush, refused, socket, transition

pytestmark = pytest.mark.django_db(transaction=True)


def pushed_seqs(html):
    return [int(part.split('"')[0]) for part in html.split('<tr id="event-')[1:]]


def cursor(html):
    return int(html.split('id="events-cursor" data-seq="')[1].split('"')[0])


@database_sync_to_async
def history(*seqs, **fields):
    for seq in seqs:
        transition(seq, **fields)


async def say(communicator, after):
    await communicator.send_json_to({"after": after})
    return await communicator.receive_from(timeout=WAIT)


@pytest.mark.asyncio
async def test_a_page_gets_what_it_missed_then_the_live_stream(redis_url, ws_headers):
    await history(1, 2, 3, 4)
    async with socket("/ws/events/", ws_headers, pushes_on_connect=False) as ws:
        html = await say(ws, 2)                         # the page was drawn at 2
        assert pushed_seqs(html) == [4, 3] and cursor(html) == 4
        assert 'hx-swap-oob="afterbegin"' in html
        await flush([event(5), event(6, "snapshot_updated"), event(7)])
        html = await ws.receive_from(timeout=WAIT)
        assert pushed_seqs(html) == [7, 5] and cursor(html) == 7
        await flush([event(7), event(8)])               # 7 again: not sent twice
        html = await ws.receive_from(timeout=WAIT)
        assert pushed_seqs(html) == [8] and cursor(html) == 8


@pytest.mark.asyncio
async def test_flushes_before_the_page_speaks_wait_and_are_not_doubled(redis_url, ws_headers):
    await history(1, 2)
    async with socket("/ws/events/", ws_headers, pushes_on_connect=False) as ws:
        await flush([event(2), event(3)])               # 2 is in the history too
        assert await ws.receive_nothing(timeout=0.3)   # nothing before the page spoke
        html = await say(ws, 1)
        assert pushed_seqs(html) == [3, 2] and cursor(html) == 3


@pytest.mark.asyncio
async def test_a_lost_flush_is_filled_from_the_history(redis_url, ws_headers):
    await history(1)
    async with socket("/ws/events/", ws_headers, pushes_on_connect=False) as ws:
        await say(ws, 1)
        await history(2, 3)                             # their flush never reached us
        await flush([event(4)])
        html = await ws.receive_from(timeout=WAIT)
        assert pushed_seqs(html) == [4, 3, 2] and cursor(html) == 4


@pytest.mark.asyncio
async def test_the_filter_in_the_url_applies_to_history_and_pushes(redis_url, ws_headers):
    await history(1, namespace="web")
    await history(2, namespace="batch")
    async with socket("/ws/events/?namespace=web&kind=pod_added", ws_headers,
                      pushes_on_connect=False) as ws:
        html = await say(ws, 0)
        assert pushed_seqs(html) == [1]
        await flush([event(3, namespace="batch"), event(4, namespace="web"),
                     event(5, "pod_removed", namespace="web")])
        html = await ws.receive_from(timeout=WAIT)
        assert pushed_seqs(html) == [4] and cursor(html) == 5
        await flush([event(6, namespace="batch")])     # nothing for this page: no push
        assert await ws.receive_nothing(timeout=0.8)


@pytest.mark.asyncio
async def test_no_change_updates_and_the_new_filters_hold_for_pushes(redis_url, ws_headers):
    unchanged = {"from_state": "Added", "to_state": "Added"}
    async with socket("/ws/events/", ws_headers, pushes_on_connect=False) as ws:
        await say(ws, 0)
        await flush([event(1, "pod_updated", **unchanged), event(2)])
        html = await ws.receive_from(timeout=WAIT)
        assert pushed_seqs(html) == [2] and cursor(html) == 2      # hidden, but counted
    async with socket("/ws/events/?unchanged=shown&actor=alice&pod=default/pod-4", ws_headers,
                      pushes_on_connect=False) as ws:
        await say(ws, 2)
        await flush([event(3, "pod_updated", actor="alice", **unchanged),
                     event(4, "pod_updated", actor="alice", **unchanged),
                     event(5, "pod_updated", actor="bob", name="pod-4", **unchanged)])
        html = await ws.receive_from(timeout=WAIT)
        assert pushed_seqs(html) == [4] and cursor(html) == 5


@pytest.mark.asyncio
async def test_a_page_away_too_long_is_told_to_reload(redis_url, ws_headers, monkeypatch):
    monkeypatch.setattr(event_reads, "CATCH_UP_LIMIT", 2)
    await history(1, 2, 3, 4)
    async with socket("/ws/events/", ws_headers, pushes_on_connect=False) as ws:
        html = await say(ws, 0)
        assert pushed_seqs(html) == [2, 1] and cursor(html) == 4
        assert 'id="events-notice"' in html and "Reload" in html


@pytest.mark.asyncio
async def test_a_bad_word_from_the_page_is_answered_and_changes_nothing(redis_url, ws_headers):
    await history(1, 2)
    async with socket("/ws/events/", ws_headers, pushes_on_connect=False) as ws:
        for bad in ['{"after": "x"}', '{"after": -1}', "[]", "not json", '{"after": true}']:
            await ws.send_to(text_data=bad)
            html = await ws.receive_from(timeout=WAIT)
            assert "something other than" in html and pushed_seqs(html) == []
        html = await say(ws, 1)
        assert pushed_seqs(html) == [2]


@pytest.mark.asyncio
async def test_a_bad_filter_or_no_login_closes_the_socket(redis_url, ws_headers):
    assert await refused("/ws/events/?kind=nope", ws_headers) == BAD_INPUT
    assert await refused("/ws/events/?since=never", ws_headers) == BAD_INPUT
    anonymous = [header for header in ws_headers if header[0] != b"cookie"]
    assert await refused("/ws/events/", anonymous) == 4401
