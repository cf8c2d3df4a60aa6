"""The pods list at a moment: the live list's filters, sorts and cursors over the pods a
reconstructed moment holds, so its page links (which carry `at`) work on either.

Why in memory: a moment is a reconstruction, not a table; its pods are filtered and
sorted as tuples (readmodel Moment.pod_summaries) and only the page's rows are built.
The cursors are the live list's (dashboard/web/pods/query.py): a position is found by
bisecting the sorted tuples, so any page of 150,000 pods costs one sort.
"""
from bisect import bisect_left, bisect_right
from collections import Counter
from operator import itemgetter

from dashboard.readmodel.cluster_state import collector_paused
from dashboard.readmodel.moment import POD_SUMMARY, Moment, pod_dict
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
_STATE = POD_SUMMARY.index("state")


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
    others = found.pod_summaries(filters.node, namespace=filters.namespace, zone=filters.zone,
                                 contains=filters.q.lower())
    by_state = Counter(map(itemgetter(_STATE), others))
    pods = [pod for pod in others if pod[_STATE] == filters.state] if filters.state else others
    sort_key = itemgetter(*(POD_SUMMARY.index(column)
                            for column in SORTS[filters.sort.lstrip("-")]))
    with collector_paused():    # a key tuple a pod: the collector's passes cost more
        pods.sort(key=sort_key)  # ascending, for bisecting; read backwards when descending
    descending = filters.sort.startswith("-")
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
            # the rows after the key (its page starts there), or before it (its page ends
            # there), in the list's order
            key = tuple(key)
            below = bisect_left(pods, key, key=sort_key)
            through = bisect_right(pods, key, key=sort_key)
            if direction == "after":
                first = total - below if descending else through
                end = first + per_page
            else:
                end = total - through if descending else below
                first = max(0, end - per_page)
        number = number or first // per_page + 1
    end = min(end, total)
    shown = pods[total - end:total - first][::-1] if descending else pods[first:end]
    rows = [past_row(pod_dict(pod), found) for pod in shown]
    return PodPage(filters, rows, total, first, found.at.timestamp(), min(number, pages),
                   by_state=dict(by_state))
