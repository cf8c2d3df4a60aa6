"""The pods list at a moment: the live list's filters, sorts and cursors over the pods a
reconstructed moment holds, so its page links (which carry `at`) work on either.

Why in memory: a moment is a reconstruction, not a table; its pods are filtered as
tuples first (readmodel Moment.pods) and only the page's rows are built. The cursors
are the live list's (dashboard/web/pods/query.py): a position is found by bisecting the
sorted keys, so any page of 150,000 pods costs one sort.
"""
from bisect import bisect_left, bisect_right
from collections import Counter

from dashboard.readmodel.moment import Moment
from dashboard.web.pods.query import (
    SORTS,
    BadFilter,
    PodFilters,
    PodPage,
    PodRow,
    check_page,
    decode_cursor,
    page_count,
)

NOT_KEPT_SORTS = ("changed",)   # the history keeps states, not when each pod last changed


def past_row(pod: dict, found: Moment) -> PodRow:
    """A moment's pod as the list's row: no expiry or stuckness is judged for the past,
    and its time is the moment's (as the REST nodes read at a moment says)."""
    return PodRow(**pod, deadline=None, changed_at=found.at, changed_ago=0.0,
                  expires_in=None, stuck=False, assumed_ago=None)


def past_pods(found: Moment, filters: PodFilters) -> PodPage:
    """One page of the moment's pods matching `filters` (BadFilter as the live list's)."""
    if filters.sort.lstrip("-") in NOT_KEPT_SORTS:
        raise BadFilter(f"sort: {filters.sort!r} is not kept for the past (the history keeps "
                        "each pod's state, not when it last changed)")
    others = found.pods(filters.node, namespace=filters.namespace, zone=filters.zone,
                        contains=filters.q.lower())
    by_state = Counter(pod["state"] for pod in others)
    columns = SORTS[filters.sort.lstrip("-")]
    pods = sorted((pod for pod in others if not filters.state or pod["state"] == filters.state),
                  key=lambda pod: [pod[column] for column in columns])
    keys = [[pod[column] for column in columns] for pod in pods]
    descending = filters.sort.startswith("-")
    if descending:
        pods.reverse()
    total, per_page = len(pods), filters.per_page
    pages = page_count(total, per_page)
    if not filters.cursor:
        check_page(filters, total)
        first, number = (filters.page - 1) * per_page, filters.page
        end = first + per_page
    else:
        direction, key, number = decode_cursor(filters.cursor, filters.sort)
        if key is None:         # the last page: what the full pages before it leave
            first, end, number = (pages - 1) * per_page, total, pages
        else:
            # by bisecting the ascending keys: the rows after the key (its page starts
            # there), or before it (its page ends there), in the list's order
            below, through = bisect_left(keys, key), bisect_right(keys, key)
            if direction == "after":
                first = total - below if descending else through
                end = first + per_page
            else:
                end = total - through if descending else below
                first = max(0, end - per_page)
        number = number or first // per_page + 1
    rows = [past_row(pod, found) for pod in pods[first:end]]
    return PodPage(filters, rows, total, first, found.at.timestamp(), min(number, pages),
                   by_state=dict(by_state))
