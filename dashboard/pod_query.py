"""The pod query the pods page and the REST API share: filters, sort, page, in SQL.

Why one module: the page, its live pushes and the API must list the same pods
for the same filters, and must refuse the same bad input with the same message.
`PodFilters.parse` validates a QueryDict or dict (raising `BadFilter`, nothing
queried); `query_pods` returns one page of rows plus the total that matched.

Every filter is an equality on an indexed column (PodRecord's indexes lead with
state, node, zone or namespace, each followed by namespace and name), so the
default sort reads one page from an index at 150,000 pods. The search `q` is a
substring of the pod's name, any case: a scan of the rows the other filters leave.
"""
from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from functools import cached_property
import time
from urllib.parse import urlencode

from django.conf import settings
from django.core.paginator import Page, Paginator
from django.db.models import Count

from dashboard.models import PodRecord, PodState
from dashboard.read_model import STATES, ago

PER_PAGE = 50
MAX_PER_PAGE = 500
MAX_PAGE = 1_000_000
MAX_TEXT = 253                       # a Kubernetes name's limit
MIB = 1024**2
# Counting 120,000 matches costs ten times the page itself: past this, "1000+".
COUNT_CAP = 1_000

# sort key -> ORDER BY columns, ascending; "-key" reverses every column. uid breaks ties
# so pages never overlap.
SORTS = {
    "name": ("namespace", "name", "uid"),
    "node": ("node", "namespace", "name", "uid"),
    "zone": ("zone", "namespace", "name", "uid"),
    "state": ("state", "namespace", "name", "uid"),
    "changed": ("changed_at", "uid"),
    "priority": ("priority", "uid"),
    "cpu": ("milli_cpu", "uid"),
    "memory": ("memory", "uid"),
}
SORT_CHOICES = [key for name in SORTS for key in (name, f"-{name}")]


class BadFilter(ValueError):
    """A filter value the query refuses; its message says which and why."""


@dataclass(frozen=True)
class PodFilters:
    state: str = ""
    namespace: str = ""
    node: str = ""
    zone: str = ""
    q: str = ""
    sort: str = "name"
    page: int = 1
    per_page: int = PER_PAGE

    @classmethod
    def parse(cls, params) -> "PodFilters":
        """From a QueryDict or a dict of strings (unknown keys ignored, empty means unset)."""
        values = {}
        for name in ("state", "namespace", "node", "zone", "q", "sort"):
            value = params.get(name)
            if value is None or value == "":
                continue
            if not isinstance(value, str):
                raise BadFilter(f"{name}: expected text")
            value = value.strip()
            if len(value) > MAX_TEXT:
                raise BadFilter(f"{name}: at most {MAX_TEXT} characters")
            if any(ord(c) < 32 or ord(c) == 127 for c in value):
                raise BadFilter(f"{name}: control characters are not allowed")
            if value:
                values[name] = value
        if values.get("state", STATES[0]) not in STATES:
            raise BadFilter(f"state: unknown state {values['state']!r}, "
                            f"one of {', '.join(STATES)}")
        if values.get("sort", "name") not in SORT_CHOICES:
            raise BadFilter(f"sort: unknown sort {values['sort']!r}, "
                            f"one of {', '.join(SORT_CHOICES)}")
        values["page"] = _number(params, "page", 1, MAX_PAGE)
        values["per_page"] = _number(params, "per_page", PER_PAGE, MAX_PER_PAGE)
        return cls(**values)

    def query(self, **changes) -> str:
        """The query string of these filters with `changes`, defaults left out:
        `query(page=None)` is what a pager or a sort link appends its own key to."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update(changes)
        defaults = PodFilters()
        return urlencode({name: value for name, value in values.items()
                          if value is not None and value != getattr(defaults, name)})

    @property
    def active(self) -> bool:
        """Whether anything narrows the list (for "no pods match" against "no pods")."""
        return bool(self.state or self.namespace or self.node or self.zone or self.q)

    def records(self):
        """The filtered, sorted queryset of PodRecords (only the columns rows print)."""
        records = PodRecord.objects.only(
            "uid", "namespace", "name", "state", "node", "zone", "binding_finished",
            "deadline", "milli_cpu", "memory", "priority", "changed_at")
        for name in ("state", "namespace", "node", "zone"):
            if getattr(self, name):
                records = records.filter(**{name: getattr(self, name)})
        if self.q:     # pod names are lowercase (RFC 1123): no lower() on 150,000 rows
            records = records.filter(name__contains=self.q.lower())
        descending = self.sort.startswith("-")
        columns = SORTS[self.sort.lstrip("-")]
        return records.order_by(*(f"-{c}" if descending else c for c in columns))


def _number(params, name, default, limit) -> int:
    raw = params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise BadFilter(f"{name}: expected a whole number, got {str(raw)[:40]!r}") from None
    if not 1 <= value <= limit:
        raise BadFilter(f"{name}: between 1 and {limit}")
    return value


@dataclass(frozen=True)
class PodRow:
    uid: str
    namespace: str
    name: str
    state: str
    node: str
    zone: str
    milli_cpu: int
    memory: int
    priority: int
    binding_finished: bool
    deadline: float | None      # epoch seconds an assumed pod whose bind finished expires
    changed_at: datetime
    changed_ago: float          # seconds since its latest transition, at `now`
    expires_in: float | None    # seconds left at `now` (negative: overdue), assumed and bound
    stuck: bool                 # assumed, bind unfinished, SCHEDVIEW_BIND_STUCK_AFTER after
                                # it was assumed (watch updates since do not reset that clock)
    assumed_ago: float | None   # seconds since it was assumed, at `now`

    @property
    def cpu(self) -> str:
        return f"{self.milli_cpu}m" if self.milli_cpu else ""

    @property
    def memory_text(self) -> str:
        return f"{self.memory / MIB:.0f} MiB" if self.memory else ""

    @property
    def assumed(self) -> bool:
        return self.state == PodState.ASSUMED

    @property
    def changed(self) -> str:
        return ago(self.changed_ago)

    @property
    def assumed_since(self) -> str:
        return ago(self.assumed_ago) if self.assumed_ago is not None else ""

    @property
    def expiry(self) -> str:
        """What an assumed, bound pod's countdown says at `now` (the page's script says the
        same as it counts)."""
        if self.expires_in is None:
            return ""
        left = round(self.expires_in)
        return f"expires in {left} s" if left >= 0 else f"expiry overdue by {-left} s"


def pod_row(record: PodRecord, now: float) -> PodRow:
    """A PodRecord as a row, its expiry and stuckness judged at `now` (epoch seconds)."""
    assumed = record.state == PodState.ASSUMED
    bound = assumed and record.binding_finished and record.deadline is not None
    changed = record.changed_at
    assumed_ago = (max(0.0, now - (record.assumed_at or changed).timestamp())
                   if assumed else None)
    stuck = (assumed and not record.binding_finished
             and assumed_ago > settings.SCHEDVIEW_BIND_STUCK_AFTER)
    return PodRow(uid=record.uid, namespace=record.namespace, name=record.name,
                  state=record.state, node=record.node, zone=record.zone,
                  milli_cpu=record.milli_cpu, memory=record.memory, priority=record.priority,
                  binding_finished=record.binding_finished, deadline=record.deadline,
                  changed_at=changed, changed_ago=max(0.0, now - changed.timestamp()),
                  expires_in=record.deadline - now if bound else None,
                  stuck=stuck, assumed_ago=assumed_ago)


class CappedPaginator(Paginator):
    """Counts at most COUNT_CAP matches (a COUNT over a LIMIT subquery of primary keys,
    which an index answers alone), so a broad filter costs what a narrow one does; the
    pages stop there."""

    @cached_property
    def count(self) -> int:
        return self.object_list.values("pk")[:COUNT_CAP + 1].count()

    @property
    def capped(self) -> bool:
        return self.count > COUNT_CAP

    @cached_property
    def num_pages(self) -> int:
        return max(1, -(-min(self.count, COUNT_CAP) // self.per_page))


@dataclass(frozen=True)
class PodPage:
    filters: PodFilters
    rows: list[PodRow]
    page: Page
    total: int          # pods matching the filters, on every page (at most COUNT_CAP)
    total_capped: bool  # more than COUNT_CAP match: `total` is a lower bound
    now: float          # the epoch seconds rows were judged at

    @cached_property
    def counts(self) -> list[tuple[str, int]]:
        """(state, count) of the pods matching the other filters, for the state tabs.
        A group by, so computed only when a page prints it."""
        others = PodFilters(namespace=self.filters.namespace, node=self.filters.node,
                            zone=self.filters.zone, q=self.filters.q)
        by_state = dict(others.records().order_by().values_list("state").annotate(n=Count("*")))
        return [(state, by_state.get(state, 0)) for state in STATES]


def query_pods(filters: PodFilters, now: float | None = None) -> PodPage:
    """One page of the pods matching `filters`: two queries (the count and the page).
    A page past the last gives the last page."""
    now = time.time() if now is None else now
    paginator = CappedPaginator(filters.records(), filters.per_page)
    page = paginator.get_page(filters.page)
    rows = [pod_row(record, now) for record in page]
    return PodPage(filters, rows, page, min(paginator.count, COUNT_CAP), paginator.capped, now)
