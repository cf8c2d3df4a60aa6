"""The events page's exports: what the filters select, from the page's cut back, streamed
as CSV or JSON lines, capped (and saying so); the same rows the pages show; a login needed."""
import csv
import io
from html import unescape

import orjson
import pytest
from channels.db import database_sync_to_async
from django.test import AsyncClient

from dashboard.web.events import export as event_export
from dashboard.web.events import reads as event_reads
from tests.dashboard.web.nodes.nodepages import transition

pytestmark = pytest.mark.django_db(transaction=True)

HOSTILE = "=HYPERLINK(\"http://evil\")"


@pytest.fixture
def viewer_async(viewer, redis_url):
    """A logged-in client through the ASGI handler, which streams an export as daphne does."""
    client = AsyncClient()
    client.force_login(viewer)
    return client


@database_sync_to_async
def history(count):
    for seq in range(1, count + 1):
        transition(seq, "pod_updated" if seq % 3 == 0 else "pod_added",
                   namespace="web" if seq % 2 else "batch", actor=HOSTILE if seq == 5 else "",
                   from_state="Added" if seq % 3 == 0 else "Initial", to_state="Added",
                   detail='a "quoted", comma' if seq == 7 else "")


async def body(client, url, status=200):
    response = await client.get(url)
    assert response.status_code == status
    if not response.streaming:
        return response, response.content.decode()
    return response, b"".join([part async for part in response.streaming_content]).decode()


def seqs(html):
    return [int(part.split('"')[0]) for part in html.split('<tr id="event-')[1:]]


async def every_page(client, query):
    """The seqs the pages show, paging back from the newest."""
    shown, url = [], f"/events/?{query}"
    while url:
        _, html = await body(client, url)
        shown += seqs(html)
        older = html.split('rel="next"')[0].rsplit('href="?', 1)[1].split('"')[0] \
            if 'rel="next"' in html else None
        url = older and f"/events/?{unescape(older)}"
    return shown


@pytest.mark.asyncio
@pytest.mark.parametrize("query", ["", "namespace=web", "namespace=web&unchanged=shown",
                                   "kind=pod_updated&unchanged=shown"])
async def test_an_export_holds_what_the_pages_show(viewer_async, monkeypatch, query):
    monkeypatch.setattr(event_reads, "EVENTS_SHOWN", 4)
    monkeypatch.setattr(event_export, "EXPORT_CHUNK", 3)     # several chunks
    await history(20)
    shown = await every_page(viewer_async, query)
    assert shown and shown == sorted(shown, reverse=True)
    response, text = await body(viewer_async, f"/events/?{query}&format=csv")
    assert response["Content-Type"].startswith("text/csv")
    assert response["X-Export-Limit"] == str(event_export.EXPORT_LIMIT)
    assert "attachment" in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [int(row["seq"]) for row in rows] == shown
    _, text = await body(viewer_async, f"/events/?{query}&format=jsonl")
    lines = [orjson.loads(line) for line in text.splitlines()]
    assert [line["seq"] for line in lines] == shown
    assert [set(line) for line in lines] == [set(event_reads.FIELDS)] * len(shown)


@pytest.mark.asyncio
async def test_an_export_keeps_its_values_and_defuses_formulas(viewer_async):
    await history(7)
    _, text = await body(viewer_async, "/events/?format=csv")
    rows = {int(row["seq"]): row for row in csv.DictReader(io.StringIO(text))}
    assert rows[7]["detail"] == 'a "quoted", comma' and rows[7]["namespace"] == "web"
    assert rows[7]["at"] == "2026-01-01T12:00:07+00:00" and rows[7]["kind"] == "pod_added"
    assert rows[5]["actor"] == "'" + HOSTILE            # shown as text by a spreadsheet
    _, text = await body(viewer_async, "/events/?format=jsonl")
    lines = {line["seq"]: line for line in map(orjson.loads, text.splitlines())}
    assert lines[5]["actor"] == HOSTILE and lines[7]["at"] == "2026-01-01T12:00:07+00:00"


@pytest.mark.asyncio
async def test_an_export_from_an_older_page_starts_at_its_cut(viewer_async):
    await history(10)
    _, html = await body(viewer_async, "/events/?namespace=web&before=6")
    assert 'href="?namespace=web&amp;before=6&amp;format=csv"' in html
    _, text = await body(viewer_async, "/events/?namespace=web&before=6&format=jsonl")
    assert [orjson.loads(line)["seq"] for line in text.splitlines()] == [5, 1]


@pytest.mark.asyncio
async def test_a_capped_export_says_so_on_its_last_line(viewer_async, monkeypatch):
    monkeypatch.setattr(event_export, "EXPORT_LIMIT", 5)
    monkeypatch.setattr(event_export, "EXPORT_CHUNK", 2)
    await history(12)                                   # 8 shown: 3, 6, 9, 12 change nothing
    _, text = await body(viewer_async, "/events/?format=jsonl")
    *rows, last = [orjson.loads(line) for line in text.splitlines()]
    assert [row["seq"] for row in rows] == [11, 10, 8, 7, 5]
    assert last == {"capped": "capped at 5 rows; the rest: before=5", "limit": 5, "before": 5}
    _, text = await body(viewer_async, "/events/?format=csv")
    assert text.splitlines()[-1] == "# capped at 5 rows; the rest: before=5"
    assert len(text.splitlines()) == 1 + 5 + 1
    _, text = await body(viewer_async, "/events/?format=jsonl&namespace=web")   # exactly 5
    assert [orjson.loads(line)["seq"] for line in text.splitlines()] == [11, 7, 5, 1]


@pytest.mark.asyncio
async def test_a_bad_format_or_filter_is_a_400_and_no_export(viewer_async):
    await history(3)
    _, html = await body(viewer_async, "/events/?format=xlsx", status=400)
    assert "format: csv or jsonl, not &#x27;xlsx&#x27;" in html
    _, html = await body(viewer_async, "/events/?format=csv&pod=a%20b", status=400)
    assert "pod: a uid or namespace/name" in unescape(html) and "seq,at" not in html


@pytest.mark.asyncio
async def test_nothing_without_a_login(redis_url):
    await history(3)
    for query in ["", "?format=csv", "?format=jsonl", "?before=2"]:
        response = await AsyncClient().get(f"/events/{query}")
        assert response.status_code == 302 and "/accounts/login/" in response["Location"]
