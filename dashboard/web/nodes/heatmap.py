"""The heat map: every node as one small cell coloured by how much of its CPU, memory or
GPUs is requested, grouped by zone.

Why cells and levels: at 5,000 nodes a table of bars is not a picture of the cluster,
while 5,000 empty links coloured by a class are a few hundred kilobytes the browser lays
out at once. Colours come in levels (THRESHOLDS), so a live push only sends the cells
whose level or figure moved: `changes` compares the map with what a viewer last got.
The levels are ten steps of 10 %: with a step at 50 % every node of a cluster using
12-33 % of its memory was one colour. A node without the resource (no GPUs) is drawn
hollow, apart from every figure.
"""
import re
from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass
from functools import cached_property
from html import escape
from itertools import groupby

from django.urls import reverse
from django.utils.safestring import mark_safe

from dashboard.models import NodeRecord
from dashboard.readmodel.cluster_state import GPU, percent
from dashboard.readmodel.moment import Moment
from dashboard.web.nodes.query import RESOURCES

THRESHOLDS = (10, 20, 30, 40, 50, 60, 70, 80, 90)   # percent requested: where the colour steps up
NOUNS = {"cpu": "CPU", "memory": "memory", "gpu": "GPUs"}


class BadMetric(ValueError):
    pass


def check_metric(metric: str) -> str:
    if metric not in RESOURCES:
        raise BadMetric(f"metric: one of {', '.join(RESOURCES)}, not {str(metric)[:40]!r}")
    return metric


def level(percent: float | None) -> str:
    """The cell's class: "none" (the node has none of it), "0"-"9" by THRESHOLDS, or
    "over" (more requested than allocatable)."""
    if percent is None:
        return "none"
    if percent > 100:
        return "over"
    return _LEVELS[bisect_right(THRESHOLDS, percent)]


_LEVELS = [str(i) for i in range(len(THRESHOLDS) + 1)]


class HeatCell:
    """One node's cell; equal to another of the same figures (its level follows them).
    A plain class with slots: a map makes 20,000 of them, a frozen dataclass's
    construction was a third of the page's time."""
    __slots__ = ("name", "percent", "metric", "level")

    def __init__(self, name: str, percent: float | None, metric: str):
        self.name, self.percent, self.metric = name, percent, metric
        self.level = level(percent)

    def __eq__(self, other):
        return (isinstance(other, HeatCell) and self.name == other.name
                and self.percent == other.percent and self.metric == other.metric)

    def __hash__(self):
        return hash((self.name, self.percent, self.metric))

    def __repr__(self):
        return f"HeatCell({self.name!r}, {self.percent!r}, {self.metric!r})"


# What a node's name is made of (a DNS subdomain): markup as it is, needing no escape.
_PLAIN = re.compile(r"[-a-z0-9.]*").fullmatch


def cells_html(cells, link_query: str = "") -> str:
    """The cells' markup: one empty link each, swapped by id when it moves. Built here
    rather than in a template loop, several times slower at thousands of cells; the
    name, the only text that is not ours, is escaped once a cell. `link_query` follows
    each link (a moment's map: "?at=<seq>")."""
    nodes = reverse("nodes")
    parts = []
    for cell in cells:
        name, noun = cell.name, NOUNS[cell.metric]
        if not _PLAIN(name):
            name = escape(name)
        figure = (f"no {noun}" if cell.percent is None
                  else f"{cell.percent:g}% of its {noun} requested")
        parts.append(f'<a id="heat-{name}" class="h-{cell.level}" '
                     f'href="{nodes}{name}/{link_query}" title="{name}: {figure}"></a>')
    return mark_safe("".join(parts))


@dataclass(frozen=True)
class HeatMap:
    metric: str
    zones: list[tuple[str, list[HeatCell]]]   # in zone order, nodes in tree order
    link_query: str = ""                      # what follows each cell's link

    @property
    def groups(self) -> list[tuple[str, int, str]]:
        """(zone, its node count, its cells' markup), in zone order."""
        return [(zone, len(cells), cells_html(cells, self.link_query))
                for zone, cells in self.zones]

    @cached_property
    def cells(self) -> dict[str, HeatCell]:
        return {cell.name: cell for _, cells in self.zones for cell in cells}

    @property
    def legend(self) -> list[tuple[str, str, int]]:
        """(level, words, nodes at it), for the key under the map."""
        counts = Counter(cell.level for _, cells in self.zones for cell in cells)
        bounds = (0, *THRESHOLDS, 100)
        words = [(str(i), f"{low}–{high}%") for i, (low, high) in
                 enumerate(zip(bounds, bounds[1:]))]
        words += [("over", "over 100%"), ("none", f"no {NOUNS[self.metric]}")]
        return [(key, text, counts.get(key, 0)) for key, text in words]


def heat_map(metric: str) -> HeatMap:
    """Every node's use of `metric`: one query of three columns, whatever the node count
    (an index-only scan of `node_heat_order` on PostgreSQL)."""
    rows = (NodeRecord.objects.order_by("zone", "tree_index", "name")
            .values_list("zone", "name", RESOURCES[check_metric(metric)]))
    return HeatMap(metric, [(zone, [HeatCell(name, percent, metric) for _, name, percent in group])
                            for zone, group in groupby(rows, key=lambda row: row[0])])


# metric -> (the usage entry's key, the scalar resource), as the read model's columns judge it
_MOMENT_USE = {"cpu": ("milli_cpu", None), "memory": ("memory", None),
               "gpu": ("scalar_resources", GPU)}


def heat_map_at(found: Moment, metric: str) -> HeatMap:
    """Every node's use of `metric` at a moment, judged as the read model's rows are, in
    the live map's order (zone, tree position, name); its cells link to the moment."""
    key, scalar = _MOMENT_USE[check_metric(metric)]

    def amount(resources):
        return resources[key].get(scalar) if scalar else resources[key]

    rows = sorted((node["zone"], node["tree_index"], node["name"],
                   percent(amount(node["requested"]), amount(node["allocatable"])))
                  for node in found.nodes())
    return HeatMap(metric, [(zone, [HeatCell(name, used, metric) for *_, name, used in group])
                            for zone, group in groupby(rows, key=lambda row: row[0])],
                   link_query=f"?at={found.seq}")


def changes(before: HeatMap | None, after: HeatMap) -> list[HeatCell] | None:
    """The cells of `after` that differ from `before`; None when nodes came or went (the
    map's layout changed: redraw it whole)."""
    if before is None:
        return None
    old, new = before.cells, after.cells
    if list(old) != list(new):
        return None
    return [cell for name, cell in new.items() if old[name] != cell]
