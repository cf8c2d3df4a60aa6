"""The overview's charts over time, from the health samples (`HealthSample`).

What goes out is what the charting library (uPlot, vendored under static/vendor/)
draws directly: one list of times (epoch seconds) and, per chart, one list of values
per line, aligned with the times; None where a figure was unknown (a gap, not a zero).
Counts of transitions become rates per second (each sample's count over its period).
A range holds at most MAX_POINTS points: longer ones are summed into buckets, so 24
hours of 10-second samples are 720 points, not 8,640.
"""
from datetime import datetime, timedelta

from django.utils import timezone

from dashboard.models import HealthSample

RANGES = {"15m": 15 * 60, "1h": 3600, "6h": 6 * 3600, "24h": 24 * 3600}
LABELS = {"15m": "15 min", "1h": "1 h", "6h": "6 h", "24h": "24 h"}   # the picker's
DEFAULT_RANGE = "1h"
MAX_POINTS = 720
# (chart, unit, [(line label, sample field, "level" | "rate", the Events page's filter for
# the transitions a point of the line counts, or "")])
CHARTS = [
    ("pods", "pods", [("Pending", "pending", "level", ""), ("Assumed", "assumed", "level", ""),
                      ("Stuck binds", "binds_stuck", "level", "")]),
    ("rates", "per second", [
        ("Binds", "binds", "rate", "kind=pod_binding_finished"),
        ("Bind failures", "bind_failures", "rate", ""),   # several causes: see Forgets
        ("Assumes", "assumes", "rate", "kind=pod_assumed"),
        ("Expiries", "expiries", "rate", "kind=pod_expired"),
        ("Forgets", "forgets", "rate", "kind=pod_forgotten")]),
    ("backlogs", "items", [("Feed backlog", "feed_backlog", "level", ""),
                           ("Not yet on the pages", "read_model_backlog", "level", "")]),
    ("lag", "seconds", [("Feed lag", "feed_lag", "level", "")]),
]
_FIELDS = ["at", "period", "counted_from"] + [field for _, _, lines in CHARTS
                                               for _, field, _, _ in lines]


class BadRange(ValueError):
    pass


def _bucket_value(rows, field, how):
    if how == "rate":
        period = sum(row["period"] for row in rows)
        return round(sum(row[field] for row in rows) / period, 3) if period else None
    known = [row[field] for row in rows if row[field] is not None]
    return known[-1] if known else None   # a level: the bucket's latest


def series(range_name: str, now: datetime | None = None) -> dict:
    if range_name not in RANGES:
        raise BadRange(f"range must be one of {', '.join(RANGES)}, not {range_name[:20]!r}")
    now = now or timezone.now()
    seconds = RANGES[range_name]
    start = now - timedelta(seconds=seconds)
    rows = list(HealthSample.objects.filter(at__gt=start, at__lte=now).order_by("at")
                .values(*_FIELDS))
    width = seconds / MAX_POINTS
    buckets = []
    for row in rows:
        index = int((row["at"] - start).total_seconds() // width)
        if buckets and buckets[-1][0] == index:
            buckets[-1][1].append(row)
        else:
            buckets.append((index, [row]))
    times = [round(group[-1]["at"].timestamp(), 3) for _, group in buckets]
    # Where each point's span begins: its first sample's period back from that sample, or
    # earlier where a counted transition was stamped earlier (it landed a flush late), so
    # that a point's events (a burst of forgets at 04:31) are one Events page window away.
    starts = [round(min([group[0]["at"].timestamp() - group[0]["period"]]
                        + [row["counted_from"].timestamp() for row in group
                           if row["counted_from"] is not None]), 3)
              for _, group in buckets]
    charts = {}
    for chart, unit, lines in CHARTS:
        charts[chart] = {"unit": unit, "lines": [
            {"label": label, "events": events,
             "values": [_bucket_value(group, field, how) for _, group in buckets]}
            for label, field, how, events in lines]}
    return {"range": range_name, "seconds": seconds, "start": start.timestamp(),
            "end": now.timestamp(), "times": times, "starts": starts, "charts": charts}
