"""The heat map: every node as one small cell coloured by how much of its CPU, memory or
GPUs is requested, grouped by zone.

Why cells and levels: at 5,000 nodes a table of bars is not a picture of the cluster,
while 5,000 empty links coloured by a class are a few hundred kilobytes the browser lays
out at once. Colours come in levels (THRESHOLDS), so a live push only sends the cells
whose level or figure moved: `changes` compares the map with what a viewer last got.
"""
from dataclasses import dataclass
from functools import cached_property
from itertools import groupby

from dashboard.models import NodeRecord
from dashboard.node_query import RESOURCES

THRESHOLDS = (50, 70, 85, 95)   # percent requested: where the colour steps up
NOUNS = {"cpu": "CPU", "memory": "memory", "gpu": "GPUs"}


class BadMetric(ValueError):
    pass


def check_metric(metric: str) -> str:
    if metric not in RESOURCES:
        raise BadMetric(f"metric: one of {', '.join(RESOURCES)}, not {str(metric)[:40]!r}")
    return metric


def level(percent: float | None) -> str:
    """The cell's class: "none" (the node has none of it), "0"-"4" by THRESHOLDS, or
    "over" (more requested than allocatable)."""
    if percent is None:
        return "none"
    if percent > 100:
        return "over"
    return str(sum(percent >= bound for bound in THRESHOLDS))


@dataclass(frozen=True)
class HeatCell:
    name: str
    percent: float | None
    metric: str

    @property
    def level(self) -> str:
        return level(self.percent)

    @property
    def title(self) -> str:
        if self.percent is None:
            return f"{self.name}: no {NOUNS[self.metric]}"
        return f"{self.name}: {self.percent:g}% of its {NOUNS[self.metric]} requested"


@dataclass(frozen=True)
class HeatMap:
    metric: str
    zones: list[tuple[str, list[HeatCell]]]   # in zone order, nodes in tree order

    @cached_property
    def cells(self) -> dict[str, HeatCell]:
        return {cell.name: cell for _, cells in self.zones for cell in cells}

    @property
    def legend(self) -> list[tuple[str, str, int]]:
        """(level, words, nodes at it), for the key under the map."""
        counts = {}
        for cell in self.cells.values():
            counts[cell.level] = counts.get(cell.level, 0) + 1
        bounds = (0, *THRESHOLDS, 100)
        words = [(str(i), f"{low}–{high}%") for i, (low, high) in
                 enumerate(zip(bounds, bounds[1:]))]
        words += [("over", "over 100%"), ("none", f"no {NOUNS[self.metric]}")]
        return [(key, text, counts.get(key, 0)) for key, text in words]


def heat_map(metric: str) -> HeatMap:
    """Every node's use of `metric`: one query of three columns, whatever the node count."""
    rows = (NodeRecord.objects.order_by("zone", "tree_index", "name")
            .values_list("zone", "name", RESOURCES[check_metric(metric)]))
    return HeatMap(metric, [(zone, [HeatCell(name, percent, metric) for _, name, percent in group])
                            for zone, group in groupby(rows, key=lambda row: row[0])])


def changes(before: HeatMap | None, after: HeatMap) -> list[HeatCell] | None:
    """The cells of `after` that differ from `before`; None when nodes came or went (the
    map's layout changed: redraw it whole)."""
    if before is None:
        return None
    old, new = before.cells, after.cells
    if list(old) != list(new):
        return None
    return [cell for name, cell in new.items() if old[name] != cell]
