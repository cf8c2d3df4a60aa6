"""The events page's exports: what its filters select, from the page's cut back, newest
first, as CSV or JSON lines.

Streamed a chunk at a time (keyset reads of EXPORT_CHUNK rows, each in the database's
thread), so an export of the whole history holds one chunk in memory, and capped at
EXPORT_LIMIT rows: a capped export says so on its last line, with where to go on from.
"""
import csv
import io

import orjson
from channels.db import database_sync_to_async
from django.http import StreamingHttpResponse

from dashboard.runtime.db_deadline import bounded_reads
from dashboard.web.events import reads as event_reads

EXPORT_LIMIT = 100_000
EXPORT_CHUNK = 2_000
FORMATS = {"csv": "text/csv; charset=utf-8", "jsonl": "application/jsonl; charset=utf-8"}
# A spreadsheet runs a cell that starts with one of these as a formula (CSV injection):
# such a cell is written with a leading apostrophe, which shows it as text.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def export_format(query) -> str:
    """`format=csv` or `format=jsonl`; "" for the page itself."""
    found = (query.get("format") or "").strip()
    if found and found not in FORMATS:
        raise event_reads.BadEventFilter(f"format: csv or jsonl, not {found[:40]!r}")
    return found


def export(event_filter: event_reads.EventFilter, top: int, form: str) -> StreamingHttpResponse:
    """The response streaming the matching events numbered below `top`, in `form`."""
    response = StreamingHttpResponse(_lines(event_filter, top, form), content_type=FORMATS[form])
    response["Content-Disposition"] = f'attachment; filename="events-below-{top}.{form}"'
    response["X-Export-Limit"] = str(EXPORT_LIMIT)
    return response


async def _lines(event_filter, top: int, form: str):
    write = _csv_lines if form == "csv" else _jsonl_lines
    if form == "csv":
        yield _csv_text([event_reads.FIELDS])
    sent = 0
    while sent < EXPORT_LIMIT:
        asked = min(EXPORT_CHUNK, EXPORT_LIMIT - sent)
        rows = await database_sync_to_async(bounded_reads(event_reads.older_than))(event_filter, top, asked)
        if rows:
            yield write(rows)
            sent += len(rows)
            top = rows[-1].seq
        if len(rows) < asked:
            return
    if await database_sync_to_async(bounded_reads(event_reads.older_than))(event_filter, top, 1):
        said = f"capped at {EXPORT_LIMIT} rows; the rest: before={top}"
        yield _csv_text([[f"# {said}"]]) if form == "csv" else orjson.dumps(
            {"capped": said, "limit": EXPORT_LIMIT, "before": top}) + b"\n"


def _csv_lines(rows) -> str:
    return _csv_text([_as_text(getattr(row, name)) for name in event_reads.FIELDS]
                     for row in rows)


def _as_text(value) -> str:
    text = value.isoformat() if hasattr(value, "isoformat") else str(value)
    return "'" + text if text.startswith(_FORMULA_STARTS) else text


def _csv_text(rows) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()


def _jsonl_lines(rows) -> bytes:
    return b"".join(orjson.dumps({name: getattr(row, name) for name in event_reads.FIELDS})
                    + b"\n" for row in rows)
