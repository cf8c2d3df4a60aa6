"""Recordings of a cluster, in kube-scheduler-simulator's recorder format.

One JSON object a line, in the order things happened:

    {"time": "2026-11-26T14:32:00.123456Z", "event": "Add", "resource": {<object>}}

`event` is "Add", "Update" or "Delete" (an informer's three handlers); `resource` is the
whole object as the API server sent it, kind and apiVersion included, except on a Delete,
where the simulator's recorder keeps only apiVersion, kind, and the name and namespace.
`time` is when the recorder saw it (RFC 3339, as Go writes a time.Time). A recording
starts with a full listing (an Add per object) and goes on with the watch's events.

The recorder (`manage.py record`, dashboard/kube/recorder.py) writes through
`RecordingWriter`; the replay (replay.py) checks every line first (`check_recording`), so
a bad file changes nothing, then plays the file a line at a time (`records`).
"""
import gzip
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import orjson

from simcluster.gcpause import gc_paused

EVENTS = ("Add", "Update", "Delete")
GZIP_MAGIC = b"\x1f\x8b"


class RecordingError(ValueError):
    """A recording that cannot be played: says which line and why."""

    def __init__(self, path, line: int, why: str):
        super().__init__(f"{path}: line {line}: {why}")
        self.line = line


@dataclass(frozen=True, slots=True)
class Record:
    at: float        # epoch seconds
    event: str       # "Add" | "Update" | "Delete"
    resource: dict   # the object (on a Delete: kind, apiVersion, name, namespace)
    line: int        # where it is in the file, for messages

    @property
    def kind(self) -> str:
        return self.resource["kind"]


def rfc3339(epoch: float) -> str:
    """A time as Go's encoding/json writes a UTC time.Time (RFC 3339, microseconds)."""
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def record_line(epoch: float, event: str, resource: dict) -> bytes:
    """One line of a recording (field order as the simulator's recorder writes them)."""
    if event == "Delete":
        meta = resource.get("metadata") or {}
        kept = {"name": meta.get("name")}
        if meta.get("namespace"):
            kept["namespace"] = meta["namespace"]
        resource = {"apiVersion": resource.get("apiVersion"), "kind": resource.get("kind"),
                    "metadata": kept}
    return orjson.dumps({"time": rfc3339(epoch), "event": event, "resource": resource}) + b"\n"


class RecordingWriter:
    """Writes whole lines to `path`.partial and renames it to `path` on close(), so the
    file under its name is always complete (gzip-compressed when the name ends in .gz).
    A writer dropped without close() leaves only the .partial file."""

    def __init__(self, path):
        self.path = Path(path)
        self.partial = self.path.with_name(self.path.name + ".partial")
        raw = open(self.partial, "wb")
        # level 6, gzip's own default: level 9 took twice the CPU for a few percent less
        self._file = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, compresslevel=6) \
            if self.path.name.endswith(".gz") else raw
        self._raw = raw
        self.lines = 0

    def write(self, line: bytes) -> None:
        self._file.write(line)
        self.lines += 1

    def flush(self) -> None:
        """Everything written so far, on disk (a gzip member stays open: only close()
        makes a readable .gz)."""
        self._file.flush()
        if self._file is not self._raw:
            self._raw.flush()

    def close(self) -> Path:
        self._close_files()
        os.replace(self.partial, self.path)
        return self.path

    def discard(self) -> None:
        """Close and remove the .partial file: nothing was recorded."""
        self._close_files()
        self.partial.unlink(missing_ok=True)

    def _close_files(self) -> None:
        self._file.close()
        if self._file is not self._raw:
            self._raw.close()


def _parse_time(text) -> float:
    if not isinstance(text, str):
        raise ValueError("time is not a string")
    # Go writes nanoseconds and any offset; Python's parser takes at most microseconds.
    head, dot, rest = text.partition(".")
    if dot:
        digits = len(rest) - len(rest.lstrip("0123456789"))
        rest = rest[:min(digits, 6)] + rest[digits:]
        text = f"{head}.{rest}" if min(digits, 6) else head + rest[digits:]
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def parse_record(data: bytes, line: int, path="recording") -> Record:
    """One line checked: a JSON object with a time, a known event and a resource with a
    kind and a name (and a namespace for a Pod)."""
    try:
        doc = orjson.loads(data.rstrip(b"\r\n"))   # so that a column is the line's own
    except orjson.JSONDecodeError as e:
        raise RecordingError(path, line, f"not JSON ({e.msg} at column {e.colno}); "
                                         f"a truncated line?") from None
    if not isinstance(doc, dict):
        raise RecordingError(path, line, "not a JSON object")
    try:
        at = _parse_time(doc.get("time"))
    except ValueError:
        raise RecordingError(path, line, f"time {doc.get('time')!r} is not an RFC 3339 time") \
            from None
    event = doc.get("event")
    if event not in EVENTS:
        raise RecordingError(path, line, f"event {event!r} is not one of {', '.join(EVENTS)}")
    resource = doc.get("resource")
    if not isinstance(resource, dict) or not isinstance(resource.get("metadata"), dict):
        raise RecordingError(path, line, "resource is not an object with metadata")
    if not isinstance(resource.get("kind"), str) or not resource["kind"]:
        raise RecordingError(path, line, "resource has no kind")
    meta = resource["metadata"]
    if not isinstance(meta.get("name"), str) or not meta["name"]:
        raise RecordingError(path, line, "resource has no metadata.name")
    if resource["kind"] == "Pod" and not meta.get("namespace"):
        raise RecordingError(path, line, "Pod has no metadata.namespace")
    return Record(at, event, resource, line)


def _lines(path):
    """(line number, bytes) of a plain or gzipped file; a cut gzip stream is an error."""
    path = Path(path)
    with open(path, "rb") as raw:
        gzipped = raw.read(2) == GZIP_MAGIC
    opened = gzip.open(path, "rb") if gzipped else open(path, "rb")
    number = 0
    with opened as stream:
        try:
            for number, data in enumerate(stream, 1):
                yield number, data
        except (EOFError, gzip.BadGzipFile, OSError) as e:
            raise RecordingError(path, number + 1, f"the file ends in the middle ({e})") \
                from None


@dataclass(frozen=True, slots=True)
class Summary:
    events: int              # records in the file
    first_at: float | None   # the first record's time (epoch seconds); None: no records
    last_at: float | None


def records(path) -> Iterator[Record]:
    """The records of a file, one line at a time (a recording may be larger than memory),
    each checked; RecordingError names the first bad line. A last line without its
    newline must still be whole JSON; blank lines are skipped."""
    for number, data in _lines(path):
        if data.strip():
            yield parse_record(data, number, path)


def check_recording(path) -> Summary:
    """Every line checked, none kept: what a replay checks before it starts."""
    count, first, last = 0, None, None
    for record in records(path):
        count, last = count + 1, record.at
        first = record.at if first is None else first
    return Summary(count, first, last)


def read_recording(path) -> list[Record]:
    """Every record of a file, checked, in memory (for a small recording)."""
    with gc_paused():   # parsed objects form no cycles; the collector would walk them all
        return list(records(path))
