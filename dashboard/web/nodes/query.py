"""The nodes table's query: filters (zone, label, taint, utilisation), sort and page, in SQL.

Why apart from node_reads: the page, its live socket and the REST list must list the
same nodes for the same query string and refuse the same bad input. The utilisation
filters and sorts read NodeRecord's percentage columns, which the owner computes once
per changed node, so 5,000 nodes are sorted by CPU use in SQL, not in Python.
"""
from dataclasses import dataclass

from django.db.models import Count, F, OuterRef, Subquery, TextField
from django.db.models.fields.json import KeyTransform
from django.db.models.functions import Cast, Coalesce

from dashboard.models import NodeRecord, PodRecord, PodState
from dashboard.readmodel.read_model import MAX_PAGE
from dashboard.web.query_params import query_string, texts, whole_number

MAX_TEXT = 316            # a qualified label key (253 prefix + "/" + 63 name) or a value
RESOURCES = {"cpu": "cpu_percent", "memory": "memory_percent", "gpu": "gpu_percent"}
# sort key -> ORDER BY, ascending; "-key" reverses it. Name breaks ties; a node without
# the resource (no GPUs) sorts last both ways.
SORTS = {"name": "name", "zone": "zone", "pods": "pods", "generation": "generation",
         "assumed": "assumed_pods", **{name: column for name, column in RESOURCES.items()}}
SORT_CHOICES = [key for name in SORTS for key in (name, f"-{name}")]


def assumed_pods():
    """A node's assumed pods, counted per row (an index range of PodRecord's (state, node)
    index each): only when the table is sorted by them."""
    counted = (PodRecord.objects.order_by().filter(state=PodState.ASSUMED, node=OuterRef("name"))
               .values("node").annotate(n=Count("*")).values("n"))
    return Coalesce(Subquery(counted), 0)


class BadNodeFilter(ValueError):
    """A value the nodes query refuses; its message says which and why."""


@dataclass(frozen=True)
class NodeFilters:
    zone: str = ""
    label: str = ""       # "key" (has the label) or "key=value"
    taint: str = ""       # text a taint's key, value or effect contains, any case
    use: str = "cpu"      # the resource `above` applies to
    above: int = 0        # percent of allocatable requested, at least (0: no filter)
    sort: str = "name"
    page: int = 1

    @classmethod
    def parse(cls, params) -> "NodeFilters":
        values = texts(params, ("zone", "label", "taint", "use", "sort"), MAX_TEXT,
                       BadNodeFilter)
        if values.get("use", "cpu") not in RESOURCES:
            raise BadNodeFilter(f"use: one of {', '.join(RESOURCES)}")
        if values.get("sort", "name") not in SORT_CHOICES:
            raise BadNodeFilter(f"sort: unknown sort {values['sort']!r}, "
                                f"one of {', '.join(SORT_CHOICES)}")
        if values.get("label", "x").startswith("="):
            raise BadNodeFilter("label: a key, or key=value")
        values["above"] = whole_number(params, "above", 0, 0, 1000, BadNodeFilter)
        values["page"] = whole_number(params, "page", 1, 1, MAX_PAGE, BadNodeFilter)
        return cls(**values)

    def query(self, **changes) -> str:
        """The query string of these filters with `changes`, defaults left out."""
        return query_string(self, **changes)

    @property
    def active(self) -> bool:
        return bool(self.zone or self.label or self.taint or self.above)

    def records(self):
        records = NodeRecord.objects.all()
        if self.zone:
            records = records.filter(zone=self.zone)
        if self.label:
            key, equals, value = self.label.partition("=")
            if equals:
                records = records.alias(label_value=KeyTransform(key, "labels")).filter(
                    label_value=value)
            else:
                records = records.filter(labels__has_key=key)
        if self.taint:
            # a substring of the taints' JSON text: at 5,000 nodes a scan, on any database
            records = records.alias(taints_text=Cast("taints", TextField())).filter(
                taints_text__icontains=self.taint)
        if self.above:
            records = records.filter(**{f"{RESOURCES[self.use]}__gte": self.above})
        if self.sort.lstrip("-") == "assumed":
            records = records.annotate(assumed_pods=assumed_pods())
        column = F(SORTS[self.sort.lstrip("-")])
        order = (column.desc(nulls_last=True) if self.sort.startswith("-")
                 else column.asc(nulls_last=True))
        return records.order_by(order, "name")
