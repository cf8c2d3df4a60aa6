"""The events page: the cache's transitions, newest first, filtered, followed live.

Why a module: the page and its live consumer must agree on what a filter lets
through (the history in SQL, the owner's pushes in Python) and on where the page
stands in the stream. A page knows the highest sequence number the history held
when it was drawn (its cursor); the consumer sends the events after the cursor,
from the history first (what the page missed while connecting or disconnected),
then from the owner's pushes.
"""
import re
from dataclasses import dataclass
from datetime import datetime, timezone as tz
from urllib.parse import urlencode

from django.db.models import F, Max, Q

from schedcache import events as cache_events

from dashboard.models import Transition
from dashboard.readmodel.moment import utc_time
from dashboard.web.nodes.reads import NODE_NAME
from dashboard.web.pods.history import shown_state
from dashboard.wire.live import OWNER_LEADING

EVENTS_SHOWN = 100      # the page's first paint
ROWS_KEPT = 300         # rows a live page keeps; older ones are dropped as new ones come
CATCH_UP_LIMIT = 500    # events a reconnecting page is sent; past that it is told to reload
KINDS = [cache_events.POD_ASSUMED, cache_events.POD_BINDING_FINISHED,
         cache_events.POD_CONFIRMED, cache_events.POD_ADDED, cache_events.POD_UPDATED,
         cache_events.POD_FORGOTTEN, cache_events.POD_EXPIRED, cache_events.POD_REMOVED,
         cache_events.NODE_ADDED, cache_events.NODE_UPDATED, cache_events.NODE_REMOVED,
         OWNER_LEADING]
NODE_KINDS = [kind for kind in KINDS if kind.startswith("node_")]
# What made a transition (Transition.cause): the owner stamps one on every event.
CAUSES = ["watch", "relist", "repair", "bind", "reaper", "operator", "owner", "extender",
          "bind deadline"]
NAMESPACE = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")   # a DNS label


class BadEventFilter(ValueError):
    pass


# The no-change updates: the watch told of a pod whose cache state stayed (Added -> Added).
# At tens a second they drown the transitions that matter, so the page hides them unless
# asked. A binding's finish (Assumed -> Assumed) is kept: it starts the expiry clock.
NO_CHANGE_KINDS = [cache_events.POD_UPDATED]
POD_KINDS = [kind for kind in KINDS if kind.startswith("pod_")]
# A pod is named by its uid (the cache's key: the API server's UUID; tests use other words)
# or as namespace/name; its name is a DNS subdomain, as a node's is.
POD_UID = re.compile(r"[-A-Za-z0-9_.]{1,253}")
ACTOR_MOST = 150         # Transition.actor's length
TEXT_FIELDS = ("kind", "namespace", "node", "cause", "actor", "pod")


@dataclass(frozen=True)
class EventFilter:
    kind: str = ""
    namespace: str = ""
    node: str = ""
    cause: str = ""
    actor: str = ""
    pod: str = ""                     # a uid, or namespace/name
    since: datetime | None = None     # the time window, both ends included
    until: datetime | None = None
    unchanged: bool = False           # show the no-change updates too

    @classmethod
    def from_query(cls, query) -> "EventFilter":
        """From a page's or socket's query string; a value that can match nothing is refused."""
        text = {name: (query.get(name) or "").strip() for name in TEXT_FIELDS}
        if text["kind"] and text["kind"] not in KINDS:
            raise BadEventFilter(f"unknown kind {text['kind'][:80]!r}: one of {', '.join(KINDS)}")
        if text["cause"] and text["cause"] not in CAUSES:
            raise BadEventFilter(f"unknown cause {text['cause'][:80]!r}: one of "
                                 f"{', '.join(CAUSES)}")
        if text["namespace"] and not NAMESPACE.fullmatch(text["namespace"]):
            raise BadEventFilter(f"{text['namespace'][:80]!r} is not a namespace name")
        if text["node"] and not NODE_NAME.fullmatch(text["node"]):
            raise BadEventFilter(f"{text['node'][:80]!r} is not a node name")
        if len(text["actor"]) > ACTOR_MOST or not text["actor"].isprintable():
            raise BadEventFilter(f"actor: at most {ACTOR_MOST} printable characters")
        if text["pod"] and not _pod_named(text["pod"]):
            raise BadEventFilter(f"pod: a uid or namespace/name, not {text['pod'][:80]!r}")
        since, until = _moment(query, "since"), _moment(query, "until")
        if since and until and since > until:
            raise BadEventFilter("since: a time before until")
        shown = (query.get("unchanged") or "").strip()
        if shown not in ("", "shown"):
            raise BadEventFilter(f"unchanged: 'shown' or nothing, not {shown[:40]!r}")
        return cls(**text, since=since, until=until, unchanged=bool(shown))

    @property
    def fields(self) -> dict:
        """The filter's values as its query string names them; empty ones left out."""
        values = {name: getattr(self, name) for name in TEXT_FIELDS}
        values.update(since=self.since and self.since.isoformat(),
                      until=self.until and self.until.isoformat(),
                      unchanged="shown" if self.unchanged else "")
        return {name: value for name, value in values.items() if value}

    @property
    def query(self) -> str:
        """The filter as a query string ("" for none), for links and the socket's URL."""
        return urlencode(self.fields)

    def matches(self, event: dict) -> bool:
        """Does a pushed event (the owner's dict) pass? Snapshot updates never do. A node's
        events are its pods' and its own (whose key is the node's name). Agrees with apply."""
        kind = event.get("kind")
        if kind not in KINDS:
            return False
        if self.node and not (event.get("node") == self.node
                              or (kind in NODE_KINDS and event.get("key") == self.node)):
            return False
        if self.pod and not (kind in POD_KINDS and all(
                event.get(name) == value for name, value in self._pod_fields().items())):
            return False
        if not self.unchanged and kind in NO_CHANGE_KINDS and (
                (event.get("from_state") or "") == (event.get("to_state") or "")):
            return False
        at = moment_of(event.get("at"))
        if (self.since and at < self.since) or (self.until and at > self.until):
            return False
        return all((event.get(name) or "") == getattr(self, name)
                   for name in ("kind", "namespace", "cause", "actor") if getattr(self, name))

    def apply(self, rows):
        """The filter on a Transition queryset: the same events `matches` lets through."""
        if self.node:
            rows = rows.filter(Q(node=self.node) | Q(key=self.node, kind__in=NODE_KINDS))
        if self.pod:
            rows = rows.filter(kind__in=POD_KINDS, **self._pod_fields())
        if not self.unchanged:
            rows = rows.exclude(kind__in=NO_CHANGE_KINDS, from_state=F("to_state"))
        if self.since:
            rows = rows.filter(at__gte=self.since)
        if self.until:
            rows = rows.filter(at__lte=self.until)
        return rows.filter(**{name: getattr(self, name) for name in ("kind", "namespace",
                                                                     "cause", "actor")
                              if getattr(self, name)})

    def _pod_fields(self) -> dict:
        namespace, slash, name = self.pod.partition("/")
        return {"namespace": namespace, "name": name} if slash else {"key": self.pod}


def _pod_named(pod: str) -> bool:
    namespace, slash, name = pod.partition("/")
    if slash:
        return bool(NAMESPACE.fullmatch(namespace) and NODE_NAME.fullmatch(name))
    return bool(POD_UID.fullmatch(pod))


def _moment(query, name: str) -> datetime | None:
    """An ISO time from the query (UTC when it names no zone), or None when absent."""
    raw = (query.get(name) or "").strip()
    if not raw:
        return None
    try:
        return utc_time(raw)
    except ValueError:
        raise BadEventFilter(f"{name}: an ISO time such as 2026-11-26T04:31:00Z, "
                             f"not {raw[:40]!r}") from None


def moment_of(at) -> datetime:
    """A transition's time: a row's datetime, or a pushed event's epoch seconds."""
    return at if isinstance(at, datetime) else datetime.fromtimestamp(at or 0, tz=tz.utc)


@dataclass(frozen=True)
class EventRow:
    seq: int
    at: datetime
    kind: str
    key: str
    namespace: str
    name: str
    node: str
    from_state: str
    to_state: str
    cause: str
    actor: str
    detail: str = ""     # why (a failed bind's API server answer), where it was told

    @property
    def is_pod(self) -> bool:
        return self.kind.startswith("pod_")

    @property
    def is_node(self) -> bool:
        return self.kind.startswith("node_")

    @property
    def shown_to_state(self) -> str:
        """Where a pod transition leads, named as the pod's timeline and diagram name it."""
        return shown_state(self.kind, self.to_state) if self.is_pod else self.to_state


def row_of(event: dict) -> EventRow:
    """A row from the owner's pushed event (`at` in epoch seconds) or a Transition's values."""
    return EventRow(seq=event["seq"], at=moment_of(event["at"]), kind=event["kind"],
                    key=event.get("key") or "",
                    namespace=event.get("namespace") or "", name=event.get("name") or "",
                    node=event.get("node") or "", from_state=event.get("from_state") or "",
                    to_state=event.get("to_state") or "", cause=event.get("cause") or "",
                    actor=event.get("actor") or "", detail=event.get("detail") or "")


# A transition as the page and its exports carry it, in this order (the CSV's columns).
FIELDS = ["seq", "at", "kind", "key", "namespace", "name", "node", "from_state", "to_state",
          "cause", "actor", "detail"]


def history_cursor() -> int:
    """The highest sequence number the history holds: where a page drawn now stands."""
    return Transition.objects.aggregate(top=Max("seq"))["top"] or 0


@dataclass(frozen=True)
class EventPage:
    filter: EventFilter
    rows: list[EventRow]   # newest first
    cursor: int
    before: int | None = None        # this page's cut: None for the newest (live) page
    next_before: int | None = None   # the cut of the page of older rows; None: this is the last


def page_cut(query) -> int | None:
    """`before=<seq>` of an older page (the rows below that number), None for the newest."""
    raw = (query.get("before") or "").strip()
    if not raw:
        return None
    if not raw.isascii() or not raw.isdigit() or not 1 <= int(raw) < 2**63:
        raise BadEventFilter(f"before: a sequence number from 1 up, not {raw[:40]!r}")
    return int(raw)


def recent_events(event_filter: EventFilter, before: int | None = None) -> EventPage:
    """EVENTS_SHOWN matching events, newest first: the newest up to the cursor, or (an older
    page) those numbered below `before`."""
    cursor = history_cursor()
    taken = older_than(event_filter, page_top(cursor, before), EVENTS_SHOWN + 1)
    rows = taken[:EVENTS_SHOWN]
    return EventPage(event_filter, rows, cursor, before,
                     rows[-1].seq if len(taken) > EVENTS_SHOWN else None)


def page_top(cursor: int, before: int | None) -> int:
    """Where a page (or its export) starts: below `before`, never past the cursor."""
    return cursor + 1 if before is None else min(before, cursor + 1)


def older_than(event_filter: EventFilter, below: int, limit: int) -> list[EventRow]:
    """At most `limit` matching events numbered below `below`, newest first: a keyset on the
    unique seq index, so a cut far back costs what the first does."""
    rows = (event_filter.apply(Transition.objects.filter(seq__lt=below)).order_by("-seq")
            .values(*FIELDS)[:limit])
    return [row_of(row) for row in rows]


def events_between(event_filter: EventFilter, after: int, before: int | None = None,
                   limit: int | None = None) -> tuple[list[EventRow], int, bool]:
    """Matching events with after < seq (< before), oldest first, at most `limit`
    (CATCH_UP_LIMIT); (rows, the highest seq the history holds in that range, whether
    more were left)."""
    limit = limit or CATCH_UP_LIMIT
    span = Transition.objects.filter(seq__gt=after)
    if before is not None:
        span = span.filter(seq__lt=before)
    top = span.aggregate(top=Max("seq"))["top"] or after
    rows = list(event_filter.apply(span).order_by("seq").values(*FIELDS)[:limit + 1])
    return [row_of(row) for row in rows[:limit]], top, len(rows) > limit
