"""The snapshot page: the generation over time, what the last snapshot copied, what the
next one will, and the nodes in the cache's most-recently-changed order.

Why a module: the chart's data comes from SnapshotSample rows (uPlot draws it, with
axes, as it draws the overview's charts: static/charts.js), and "changed since the last
snapshot" is a comparison of two tables. The owner takes a snapshot every second
when something changed, recording the nodes it copied; a node changed since then
has a generation above the latest snapshot's.
"""
from dataclasses import dataclass
from datetime import datetime

import orjson
from django.utils import timezone

from dashboard.models import NodeRecord, SnapshotSample
from dashboard.readmodel.moment import Moment
from dashboard.readmodel.read_model import ago

CHART_SAMPLES = 300   # the latest samples drawn (5 minutes at one a second)
NODES_SHOWN = 20      # in each list of nodes, then "… and N more" (the whole list is on Nodes)


@dataclass(frozen=True)
class Chart:
    """The snapshot's generation (drawn as a step line: it holds until the next snapshot)
    and the cache's generation at each snapshot, as the charting library takes them."""
    data: dict      # {"times", "lines": [{"label", "values"}], "unit", "stepped"}
    low: int
    high: int
    start: str      # how long ago the first sample was taken
    samples: int

    @property
    def json(self) -> str:
        """The data as the page's figure carries it (an attribute: no script in the page)."""
        return orjson.dumps(self.data).decode()


def chart(samples: list[SnapshotSample], now: datetime) -> Chart | None:
    """Samples oldest first; None without two samples to draw a line between."""
    if len(samples) < 2:
        return None
    low = min(s.generation for s in samples)
    high = max(max(s.cache_generation, s.generation) for s in samples)
    data = {"times": [round(s.at.timestamp(), 3) for s in samples], "unit": "generation",
            "stepped": True,
            "lines": [{"label": "Snapshot generation", "values": [s.generation for s in samples]},
                      {"label": "Cache generation when taken",
                       "values": [s.cache_generation for s in samples]}]}
    return Chart(data, low, high, ago((now - samples[0].at).total_seconds()), len(samples))


@dataclass(frozen=True)
class ChangedNode:
    name: str
    generation: int
    zone: str
    has_node: bool


@dataclass(frozen=True)
class SnapshotPage:
    generation: int | None         # the latest snapshot's; None before the first
    cache_generation: int          # the newest generation in the read model
    taken: str
    chart: Chart | None
    copied: list[str]              # the nodes the latest snapshot copied, most recent first
    pending: list[ChangedNode]     # changed since the latest snapshot, most recent first
    pending_count: int
    recent: list[ChangedNode]      # every node, most recently changed first
    copied_count: int = 0          # of which `copied` lists the first NODES_SHOWN
    node_count: int = 0            # of which `recent` lists the first NODES_SHOWN

    @property
    def more(self) -> dict[str, int]:
        """How many each list leaves out."""
        return {"copied": self.copied_count - len(self.copied),
                "pending": self.pending_count - len(self.pending),
                "recent": self.node_count - len(self.recent)}


def _changed(records) -> list[ChangedNode]:
    return [ChangedNode(name, generation, zone, has_node)
            for name, generation, zone, has_node in records[:NODES_SHOWN]]


def snapshot_page(now: datetime | None = None, moment: Moment | None = None) -> SnapshotPage:
    """The page now, or as it was at `moment`: the samples taken up to it and the nodes'
    generations as it held them."""
    now = now or (moment.at if moment else timezone.now())
    samples = SnapshotSample.objects.order_by("-at", "-id")
    if moment is not None:
        samples = samples.filter(at__lte=moment.at)
    # Only the latest sample's changed nodes are shown: read on use, for it alone.
    samples = list(samples.defer("changed_nodes")[:CHART_SAMPLES])[::-1]
    latest = samples[-1] if samples else None
    if moment is None:
        by_recency = NodeRecord.objects.order_by("-generation", "name").values_list(
            "name", "generation", "zone", "has_node")
        node_count = by_recency.count()
    else:
        by_recency = sorted(((n["name"], n["generation"], n["zone"], n["has_node"])
                             for n in moment.nodes()), key=lambda n: (-n[1], n[0]))
        node_count = len(by_recency)
    recent = _changed(by_recency)
    if latest is None:
        return SnapshotPage(None, recent[0].generation if recent else 0, "", None, [], [], 0,
                            recent, node_count=node_count)
    if moment is None:
        pending = by_recency.filter(generation__gt=latest.generation)
        pending_count = pending.count()
    else:   # newest first: the changed nodes lead
        pending = [n for n in by_recency if n[1] > latest.generation]
        pending_count = len(pending)
    return SnapshotPage(
        generation=latest.generation,
        cache_generation=max(latest.cache_generation, recent[0].generation if recent else 0),
        taken=ago((now - latest.at).total_seconds()), chart=chart(samples, now),
        copied=latest.changed_nodes[:NODES_SHOWN], pending=_changed(pending),
        pending_count=pending_count, recent=recent,
        copied_count=len(latest.changed_nodes), node_count=node_count)
