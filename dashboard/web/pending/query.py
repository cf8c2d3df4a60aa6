"""The Pending page's query: its filters (reason, namespace, page, per_page) and one page
of the owner's `pending_pods` answer (dashboard/owner/pending_queue.py).

Why from the owner and not the read model: the queue's order needs each pod's creation
time and its reason from the owner's sweep, which only the owner holds; it answers one
page, so a request costs O(page) over Redis whatever the queue's length. Pages are
numbered (an offset; one past the last is refused, as the pods page refuses it): the
queue is sorted in memory, so an offset costs nothing to skip, and the pods page's
keyset cursors would buy nothing.
"""
from dataclasses import dataclass
from datetime import datetime

from django.core.paginator import Page, Paginator

from dashboard.clients import owner_client
from dashboard.readmodel.read_model import MAX_PAGE, ago
from dashboard.web.query_params import query_string, texts, whole_number
from dashboard.wire.pending import MAX_FILTER, MAX_LIMIT

PER_PAGE = 50
TIMEOUT = 5.0       # seconds the owner has to answer a person's request


class BadFilter(ValueError):
    """A filter value the page refuses; its message says which and why."""


@dataclass(frozen=True)
class PendingFilters:
    reason: str = ""
    namespace: str = ""
    page: int = 1
    per_page: int = PER_PAGE

    @classmethod
    def parse(cls, params) -> "PendingFilters":
        values = texts(params, ("reason", "namespace"), MAX_FILTER, BadFilter)
        values["page"] = whole_number(params, "page", 1, 1, MAX_PAGE, BadFilter)
        values["per_page"] = whole_number(params, "per_page", PER_PAGE, 1, MAX_LIMIT,
                                          BadFilter)
        return cls(**values)

    @property
    def active(self) -> bool:
        return bool(self.reason or self.namespace)

    def query(self, **changes) -> str:
        return query_string(self, **changes)


@dataclass
class PendingRow:
    uid: str
    namespace: str
    name: str
    priority: int
    position: int         # in the whole queue, whatever the filters
    created: str | None   # the pod's creationTimestamp, as the API server wrote it
    age: str              # since then
    reason: str


@dataclass
class PendingPage:
    filters: PendingFilters
    rows: list            # PendingRow, in the queue's order
    queued: int           # pods in the queue
    total: int            # those matching the filters
    counts: dict          # "reason" / "namespace" / "priority" -> [(value, pods)]
    page: Page            # a Django Page over the matches, for the pager


def _age(created: str | None, now: datetime) -> str:
    """"4 min" since `created` (RFC 3339, as the API server writes it); "" when it says
    nothing readable (a hostile or odd cluster's pod still lists)."""
    try:
        born = datetime.fromisoformat(created)
        return ago((now - born).total_seconds()).removesuffix(" ago")
    except (TypeError, ValueError):
        return ""


def pending_page(filters: PendingFilters, now: datetime) -> PendingPage:
    """One page of the queue; raises BadFilter for a page past the last, CommandError
    (OwnerUnavailable, 503) without a live owner."""
    args = {"offset": (filters.page - 1) * filters.per_page, "limit": filters.per_page}
    args.update((key, value) for key, value in (("reason", filters.reason),
                                                ("namespace", filters.namespace)) if value)
    answer = owner_client.pending_pods(args, timeout=TIMEOUT)
    paginator = Paginator(range(answer["total"]), filters.per_page)
    if filters.page > paginator.num_pages:
        raise BadFilter(f"page: {filters.page} is past the last page, {paginator.num_pages} "
                        f"({answer['total']} pods, {filters.per_page} a page)")
    rows = [PendingRow(item["uid"], item["namespace"], item["name"], item["priority"],
                       item["position"], item["created"], _age(item["created"], now),
                       item["reason"])
            for item in answer["items"]]
    counts = {key: [tuple(pair) for pair in pairs] for key, pairs in answer["counts"].items()}
    return PendingPage(filters, rows, answer["queued"], answer["total"], counts,
                       paginator.page(filters.page))
