"""The pod query the pods page and the REST API share: filters, sort, page, in SQL.

Why one module: the page, its live pushes and the API must list the same pods
for the same filters, and must refuse the same bad input with the same message.
`PodFilters.parse` validates a QueryDict or dict (raising `BadFilter`, nothing
queried); `query_pods` returns one page of rows plus the total that matched.

Every filter is an equality on an indexed column (PodRecord's indexes lead with
state, node, zone or namespace, each followed by namespace and name), so the
default sort reads one page from an index at 150,000 pods. The search `q` is a
substring of the pod's name, any case: a scan of the rows the other filters leave.

Pages are reached by cursor (keyset paging): a cursor holds the sort key of the row a
page starts after (or ends before), so any page, the last of 150,000 pods included, is
an index range rather than an offset that reads every row before it. A cursor also holds
the number of the page it leads to: under churn the rows before a cursor come and go, so
a number derived from a position would say "page 1" on the second page. The last page
holds what is left after the full pages before it (2,601-2,619 of 2,619, page 53 of 53),
so the pages a person walks from either end are the same pages. Page numbers stay for
older tools (an offset; one past the last is refused).
"""
import base64
import json
import time
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connections
from django.db.models import BooleanField, Count
from django.db.models.expressions import RawSQL

from dashboard.models import PodRecord, PodState
from dashboard.readmodel.read_model import MAX_PAGE, STATES, ago, cpu_text, memory_text
from dashboard.web.query_params import query_string, texts, whole_number

PER_PAGE = 50
MAX_PER_PAGE = 500
MAX_TEXT = 253                       # a Kubernetes name's limit
MAX_CURSOR = 2000                    # a cursor holds at most a few names and a uid

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
    cursor: str = ""
    at: str = ""          # a moment of the past (dashboard/web/past/pod_list.py lists it)

    @classmethod
    def parse(cls, params) -> "PodFilters":
        """From a QueryDict or a dict of strings (unknown keys ignored, empty means unset)."""
        values = texts(params, ("state", "namespace", "node", "zone", "q", "sort", "at"),
                       MAX_TEXT, BadFilter)
        if values.get("state", STATES[0]) not in STATES:
            raise BadFilter(f"state: unknown state {values['state']!r}, "
                            f"one of {', '.join(STATES)}")
        if values.get("sort", "name") not in SORT_CHOICES:
            raise BadFilter(f"sort: unknown sort {values['sort']!r}, "
                            f"one of {', '.join(SORT_CHOICES)}")
        values["page"] = whole_number(params, "page", 1, 1, MAX_PAGE, BadFilter)
        values["per_page"] = whole_number(params, "per_page", PER_PAGE, 1, MAX_PER_PAGE,
                                          BadFilter)
        cursor = params.get("cursor")
        if cursor:
            if not isinstance(cursor, str) or len(cursor) > MAX_CURSOR:
                raise BadFilter(f"cursor: text of at most {MAX_CURSOR} characters")
            if values["page"] != 1:
                raise BadFilter("cursor: give a cursor or a page number, not both")
            values["cursor"] = cursor
            decode_cursor(cursor, values.get("sort", "name"))
        return cls(**values)

    def query(self, **changes) -> str:
        """The query string of these filters with `changes`, defaults left out:
        `query(page=None)` is what a pager or a sort link appends its own key to."""
        return query_string(self, **changes)

    @property
    def active(self) -> bool:
        """Whether anything narrows the list (for "no pods match" against "no pods")."""
        return bool(self.state or self.namespace or self.node or self.zone or self.q)

    def records(self):
        """The filtered, sorted queryset of PodRecords (only the columns rows print)."""
        records = PodRecord.objects.only(
            "uid", "namespace", "name", "state", "node", "zone", "binding_finished", "assumed_at",
            "deadline", "milli_cpu", "memory", "scalar_resources", "priority", "changed_at")
        for name in ("state", "namespace", "node", "zone"):
            if getattr(self, name):
                records = records.filter(**{name: getattr(self, name)})
        if self.q:     # pod names are lowercase (RFC 1123): no lower() on 150,000 rows
            records = records.filter(name__contains=self.q.lower())
        descending = self.sort.startswith("-")
        columns = SORTS[self.sort.lstrip("-")]
        return records.order_by(*(f"-{c}" if descending else c for c in columns))


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
    scalar_resources: dict      # extended resources requested (GPUs), name -> amount
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
        return cpu_text(self.milli_cpu)

    @property
    def memory_text(self) -> str:
        return memory_text(self.memory)

    @property
    def extended(self) -> list[tuple[str, int]]:
        """(name, amount) of the extended resources it requests, by name."""
        return sorted((self.scalar_resources or {}).items())

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
                  milli_cpu=record.milli_cpu, memory=record.memory,
                  scalar_resources=record.scalar_resources, priority=record.priority,
                  binding_finished=record.binding_finished, deadline=record.deadline,
                  changed_at=changed, changed_ago=max(0.0, now - changed.timestamp()),
                  expires_in=record.deadline - now if bound else None,
                  stuck=stuck, assumed_ago=assumed_ago)


@dataclass(frozen=True)
class PodPage:
    filters: PodFilters
    rows: list[PodRow]
    total: int          # pods matching the filters, on every page (exact)
    first: int          # the position of the first row among them (0-based)
    now: float          # the epoch seconds rows were judged at

    @property
    def has_previous(self) -> bool:
        return self.first > 0

    @property
    def has_next(self) -> bool:
        return self.first + len(self.rows) < self.total

    number: int         # the page this is, 1 to `pages`
    by_state: dict | None = None   # a moment's counts by state (the live list's: a query)

    @property
    def pages(self) -> int:
        return page_count(self.total, self.filters.per_page)

    @property
    def shown(self) -> tuple[int, int]:
        """The 1-based positions of the first and last rows shown ((0, 0) for none)."""
        return (self.first + 1, self.first + len(self.rows)) if self.rows else (0, 0)

    @cached_property
    def cursors(self) -> dict[str, str | None]:
        """The cursors of the pages around this one: "previous", "next" (None where there
        is none) and "last"; the first page needs none."""
        sort = self.filters.sort
        return {"previous": (encode_cursor("before", sort, _key_of(self.rows[0], sort),
                                           max(1, self.number - 1))
                             if self.has_previous and self.rows else None),
                "next": (encode_cursor("after", sort, _key_of(self.rows[-1], sort),
                                       min(self.pages, self.number + 1))
                         if self.has_next and self.rows else None),
                "last": encode_cursor("before", sort, None)}

    @cached_property
    def links(self) -> dict[str, str]:
        """The pager's query strings: "first", and the pages `cursors` names."""
        links = {"first": self.filters.query(page=None, cursor=None)}
        links.update((which, self.filters.query(page=None, cursor=cursor))
                     for which, cursor in self.cursors.items() if cursor is not None)
        return links

    @cached_property
    def counts(self) -> list[tuple[str, int]]:
        """(state, count) of the pods matching the other filters, for the state tabs.
        A group by, so computed only when a page prints it."""
        if self.by_state is not None:
            return [(state, self.by_state.get(state, 0)) for state in STATES]
        others = PodFilters(namespace=self.filters.namespace, node=self.filters.node,
                            zone=self.filters.zone, q=self.filters.q)
        by_state = dict(others.records().order_by().values_list("state").annotate(n=Count("*")))
        return [(state, by_state.get(state, 0)) for state in STATES]


def encode_cursor(direction: str, sort: str, key: list | None, page: int | None = None) -> str:
    """An opaque cursor: the rows after (or before) `key` in `sort` order, which are page
    `page`; a `before` cursor without a key is the last page."""
    raw = json.dumps([direction, sort, key] + ([page] if page else []), default=str,
                     separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str, sort: str) -> tuple[str, list | None, int | None]:
    """(direction, key values as the columns hold them, the page number it leads to, when
    it says) of a cursor made for `sort`. A cursor of three parts (no page) is one an
    earlier version handed out: still followed."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        direction, made_for, key, *page = json.loads(raw)
        page = page[0] if len(page) == 1 else None if not page else "too long"
        columns = SORTS[made_for.lstrip("-")]
        if direction not in ("after", "before") or (
                key is not None and (not isinstance(key, list) or len(key) != len(columns))) or (
                page is not None and (type(page) is not int or not 1 <= page <= MAX_PAGE)):
            raise ValueError(direction)
        if key is not None:
            key = [PodRecord._meta.get_field(c).to_python(v) for c, v in zip(columns, key)]
    except (ValueError, TypeError, KeyError, AttributeError, ValidationError):
        raise BadFilter("cursor: not a cursor of this list (take next_cursor, prev_cursor "
                        "or last_cursor from an answer)") from None
    if made_for != sort:
        raise BadFilter(f"cursor: made for sort {made_for!r}, not {sort!r}")
    return direction, key, page


def _key_of(row: PodRow, sort: str) -> list:
    return [getattr(row, column) for column in SORTS[sort.lstrip("-")]]


def _beyond(records, sort: str, key: list, later: bool):
    """`records` strictly after `key` in `sort` order (before it, when not `later`): one
    row-value comparison, which an index on the sort's columns answers as a range."""
    columns = SORTS[sort.lstrip("-")]
    connection = connections[records.db]
    op = ">" if later != sort.startswith("-") else "<"
    names = ", ".join(connection.ops.quote_name(c) for c in columns)
    params = [PodRecord._meta.get_field(c).get_db_prep_value(v, connection)
              for c, v in zip(columns, key)]
    marks = ", ".join(["%s"] * len(columns))
    return records.filter(RawSQL(f"({names}) {op} ({marks})", params,
                                 output_field=BooleanField()))


def _reversed(records, sort: str):
    flipped = sort[1:] if sort.startswith("-") else f"-{sort}"
    columns = SORTS[sort.lstrip("-")]
    return records.order_by(*(f"-{c}" if flipped.startswith("-") else c for c in columns))


def page_count(total: int, per_page: int) -> int:
    return max(1, -(-total // per_page))


def check_page(filters: PodFilters, total: int) -> None:
    """BadFilter for a page number past the last, naming the last."""
    pages = page_count(total, filters.per_page)
    if filters.page > pages:
        raise BadFilter(f"page: {filters.page} is past the last page, {pages} "
                        f"({total} pods, {filters.per_page} a page)")


def query_pods(filters: PodFilters, now: float | None = None) -> PodPage:
    """One page of the pods matching `filters`: the count, then the page, by its cursor
    (an index range: the last of 150,000 pods costs what the first does) or by its number
    (an offset, for older tools). A page number past the last is refused, naming the last."""
    now = time.time() if now is None else now
    records = filters.records()
    total = records.order_by().count()
    per_page = filters.per_page
    pages = page_count(total, per_page)
    if filters.cursor:
        direction, key, number = decode_cursor(filters.cursor, filters.sort)
        if direction == "after":
            found = list(_beyond(records, filters.sort, key, later=True)[:per_page])
            # the rows up to the cursor's key come before this page
            first = total - _beyond(records, filters.sort, key, later=True).order_by().count()
        else:
            backwards = _reversed(records, filters.sort)
            if key is not None:
                backwards = _beyond(backwards, filters.sort, key, later=False)
            else:   # the last page: what the full pages before it leave
                number = pages
            size = per_page if key is not None else total - (pages - 1) * per_page
            found = list(backwards[:max(1, size)])[::-1]
            before = (total if key is None else
                      _beyond(records, filters.sort, key, later=False).order_by().count())
            first = before - len(found)
        if number is None:   # an earlier version's cursor: the page its position falls in
            number = max(0, first) // per_page + 1
    else:
        check_page(filters, total)
        number = filters.page
        first = (filters.page - 1) * per_page
        found = list(records[first:first + per_page])
    rows = [pod_row(record, now) for record in found]
    return PodPage(filters, rows, total, max(0, first), now, min(number, pages))


MAX_NAMESPACES = 1000   # the picker lists at most this many


def namespaces() -> list[str]:
    """The namespaces pods are in, sorted: a loose index scan (one index probe per
    namespace, on PodRecord's (namespace, name) index), since a DISTINCT reads all
    150,000 rows to find a few dozen names."""
    table = connections[PodRecord.objects.db].ops.quote_name(PodRecord._meta.db_table)
    sql = (f"WITH RECURSIVE found(namespace, n) AS ("
           f" SELECT MIN(namespace), 1 FROM {table}"
           f" UNION ALL SELECT (SELECT MIN(namespace) FROM {table} t"
           f" WHERE t.namespace > found.namespace), n + 1 FROM found"
           f" WHERE found.namespace IS NOT NULL AND n < %s)"
           f" SELECT namespace FROM found WHERE namespace IS NOT NULL")
    with connections[PodRecord.objects.db].cursor() as cursor:
        cursor.execute(sql, [MAX_NAMESPACES])
        return [namespace for (namespace,) in cursor.fetchall()]
