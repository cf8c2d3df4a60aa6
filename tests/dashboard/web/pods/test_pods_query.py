"""The pod query the pods page and the REST API share: validation, filters, sort, pages."""
import base64
import json
from datetime import timedelta

import pytest
from django.http import QueryDict

from dashboard.models import PodRecord
from dashboard.web.pods.query import (
    MAX_PER_PAGE,
    BadFilter,
    PodFilters,
    encode_cursor,
    namespaces,
    query_pods,
)
from tests.dashboard.web.pods.podpages import T0, pod

pytestmark = pytest.mark.django_db

NOW = T0.timestamp() + 10


def raw_cursor(parts) -> str:
    return base64.urlsafe_b64encode(json.dumps(parts).encode()).decode()


def uids(filters, **params):
    return [row.uid for row in query_pods(PodFilters.parse({**filters, **params}), NOW).rows]


def test_parse_takes_a_querydict_and_leaves_out_the_defaults():
    filters = PodFilters.parse(QueryDict("state=Assumed&namespace=+team+&q=&page=2&other=x"))
    assert filters == PodFilters(state="Assumed", namespace="team", page=2)
    assert filters.query() == "state=Assumed&namespace=team&page=2"
    assert filters.query(page=None, sort="-node") == "state=Assumed&namespace=team&sort=-node"
    assert filters.active and not PodFilters().active


@pytest.mark.parametrize("params, message", [
    ({"state": "Running"}, "state: unknown state 'Running', one of Pending, Assumed"),
    ({"sort": "uid"}, "sort: unknown sort 'uid'"),
    ({"page": "two"}, "page: expected a whole number, got 'two'"),
    ({"page": "0"}, "page: between 1 and"),
    ({"per_page": str(MAX_PER_PAGE + 1)}, f"per_page: between 1 and {MAX_PER_PAGE}"),
    ({"namespace": "a" * 254}, "namespace: at most 253 characters"),
    ({"q": "web\x00"}, "q: control characters are not allowed"),
    ({"node": ["n1"]}, "node: expected text"),
])
def test_bad_filters_are_refused_with_what_was_wrong(params, message):
    with pytest.raises(BadFilter) as refused:
        PodFilters.parse(params)
    assert str(refused.value).startswith(message)


def test_filters_narrow_by_state_namespace_node_zone_and_name():
    pod("a", "Added", namespace="team", node="n1", zone="z1", name="web-1")
    pod("b", "Assumed", namespace="team", node="n2", zone="z2", name="web-2")
    pod("c", "Added", namespace="other", node="n1", zone="z1", name="db-1")
    pod("d", "Pending", namespace="team", name="web-3")
    assert uids({}) == ["c", "a", "b", "d"]               # by namespace, then name
    assert uids({"state": "Added"}) == ["c", "a"]
    assert uids({"namespace": "team", "zone": "z1"}) == ["a"]
    assert uids({"node": "n1"}) == ["c", "a"]
    assert uids({"q": "WEB"}) == ["a", "b", "d"]           # case-insensitive substring
    assert uids({"q": "nothing"}) == []


def test_every_sort_both_ways_with_ties_broken_by_uid():
    pod("a", "Added", node="n2", priority=5, changed_at=T0)
    pod("b", "Assumed", node="n1", priority=5, changed_at=T0 + timedelta(seconds=2))
    pod("c", "Pending", node="n3", priority=1, changed_at=T0 + timedelta(seconds=1))
    assert uids({"sort": "node"}) == ["b", "a", "c"]
    assert uids({"sort": "-node"}) == ["c", "a", "b"]
    assert uids({"sort": "changed"}) == ["a", "c", "b"]
    assert uids({"sort": "-changed"}) == ["b", "c", "a"]
    assert uids({"sort": "priority"}) == ["c", "a", "b"]
    assert uids({"sort": "-priority"}) == ["b", "a", "c"]
    assert uids({"sort": "state"}) == ["a", "b", "c"]


def test_page_numbers_hold_per_page_rows_and_one_past_the_last_is_refused():
    for i in range(7):
        pod(f"p{i}")
    listing = query_pods(PodFilters.parse({"per_page": "3", "page": "2"}), NOW)
    assert [row.uid for row in listing.rows] == ["p3", "p4", "p5"]
    assert (listing.total, listing.pages, listing.number, listing.shown) == (7, 3, 2, (4, 6))
    assert [row.uid for row in query_pods(PodFilters(per_page=3, page=3), NOW).rows] == ["p6"]
    with pytest.raises(BadFilter, match=r"page: 4 is past the last page, 3 \(7 pods"):
        query_pods(PodFilters(per_page=3, page=4), NOW)
    assert query_pods(PodFilters(page=1), NOW).rows    # the first page always exists
    assert query_pods(PodFilters(state="Expired", page=1), NOW).shown == (0, 0)


def walk(filters, which):
    """The uids of every page, following `which` cursor from the first (or last) page."""
    pages = []
    listing = query_pods(filters, NOW)
    while True:
        pages.append([row.uid for row in listing.rows])
        cursor = listing.cursors[which]
        if cursor is None:
            return pages
        listing = query_pods(PodFilters.parse({**_params(filters), "cursor": cursor}), NOW)


def _params(filters):
    return {"sort": filters.sort, "per_page": str(filters.per_page), "state": filters.state}


@pytest.mark.parametrize("sort", ["name", "-name", "changed", "-cpu", "node", "-priority"])
def test_cursors_walk_every_page_both_ways_without_overlap(sort):
    for i in range(11):
        pod(f"p{i:02}", node=f"n{i % 3}", priority=i % 4, milli_cpu=100 * (i % 5),
            changed_at=T0 + timedelta(seconds=i % 6))
    everything = uids({"sort": sort, "per_page": "500"})
    forwards = walk(PodFilters(sort=sort, per_page=3), "next")
    assert [len(page) for page in forwards] == [3, 3, 3, 2]
    assert sum(forwards, []) == everything
    last = query_pods(PodFilters.parse({"sort": sort, "per_page": "3",
                                        "cursor": query_pods(PodFilters(sort=sort), NOW)
                                        .cursors["last"]}), NOW)
    # The last page holds what the full pages before it leave: walking back from it
    # gives the same pages as walking forwards, each with the same number.
    assert [row.uid for row in last.rows] == everything[-2:]
    assert (last.shown, last.has_next, last.has_previous) == ((10, 11), False, True)
    assert (last.number, last.pages) == (4, 4)
    backwards = walk(last.filters, "previous")
    assert backwards[::-1] == forwards


def test_a_cursor_page_knows_where_it_stands():
    for i in range(10):
        pod(f"p{i}")
    second = query_pods(PodFilters.parse(
        {"per_page": "4", "cursor": query_pods(PodFilters(per_page=4), NOW).cursors["next"]}),
        NOW)
    assert [row.uid for row in second.rows] == ["p4", "p5", "p6", "p7"]
    assert (second.shown, second.number, second.pages) == ((5, 8), 2, 3)
    assert "cursor=" in second.links["next"] and "cursor" not in second.links["first"]


def test_the_last_page_is_numbered_last_and_overlaps_no_other():
    """2,619 pods read "2,570-2,619 of 2,619 (page 52 of 53)" on the last page (issue 25)."""
    for i in range(9):
        pod(f"p{i}")
    last = query_pods(PodFilters(per_page=4, cursor=query_pods(
        PodFilters(per_page=4), NOW).cursors["last"]), NOW)
    assert ([row.uid for row in last.rows], last.shown) == (["p8"], (9, 9))
    assert (last.number, last.pages) == (3, 3)
    before = query_pods(PodFilters(per_page=4, cursor=last.cursors["previous"]), NOW)
    assert ([row.uid for row in before.rows], before.number) == (["p4", "p5", "p6", "p7"], 2)


def test_a_cursor_page_keeps_its_number_while_rows_come_and_go_before_it():
    """Over REST the second cursor page said `page: 1` once rows were deleted before it:
    the number came from the position. The cursor carries the number it leads to."""
    for i in range(10):
        pod(f"p{i}")
    first = query_pods(PodFilters(per_page=4), NOW)
    PodRecord.objects.filter(uid__in=["p0", "p1", "p2"]).delete()   # churn before the cursor
    second = query_pods(PodFilters(per_page=4, cursor=first.cursors["next"]), NOW)
    assert [row.uid for row in second.rows] == ["p4", "p5", "p6", "p7"]
    assert (second.number, second.shown) == (2, (2, 5))
    back = query_pods(PodFilters(per_page=4, cursor=second.cursors["previous"]), NOW)
    assert back.number == 1


def test_a_cursor_of_the_earlier_kind_still_pages():
    for i in range(6):
        pod(f"p{i}")
    older = encode_cursor("after", "name", ["default", "p1", "p1"])   # no page number in it
    page = query_pods(PodFilters.parse({"per_page": "2", "cursor": older}), NOW)
    assert ([row.uid for row in page.rows], page.number) == (["p2", "p3"], 2)


def test_a_cursor_whose_row_is_gone_still_finds_its_place():
    for i in range(6):
        pod(f"p{i}")
    first = query_pods(PodFilters(per_page=2), NOW)
    PodRecord.objects.filter(uid="p1").delete()     # the row the cursor names
    after = query_pods(PodFilters(per_page=2, cursor=first.cursors["next"]), NOW)
    assert [row.uid for row in after.rows] == ["p2", "p3"] and after.shown == (2, 3)


@pytest.mark.parametrize("params, message", [
    ({"cursor": "not-a-cursor"}, "cursor: not a cursor of this list"),
    ({"cursor": encode_cursor("sideways", "name", None)}, "cursor: not a cursor of this list"),
    ({"cursor": encode_cursor("after", "name", ["a"])}, "cursor: not a cursor of this list"),
    ({"cursor": encode_cursor("after", "changed", ["yesterday", "u"])},
     "cursor: not a cursor of this list"),
    ({"cursor": encode_cursor("before", "node", None)}, "cursor: made for sort 'node', not 'name'"),
    ({"cursor": encode_cursor("before", "name", None), "page": "2"},
     "cursor: give a cursor or a page number, not both"),
    ({"cursor": "x" * 2001}, "cursor: text of at most 2000 characters"),
    ({"cursor": raw_cursor(["after", "name", ["a", "b", "c"], 0])},
     "cursor: not a cursor of this list"),
    ({"cursor": raw_cursor(["after", "name", ["a", "b", "c"], "2"])},
     "cursor: not a cursor of this list"),
    ({"cursor": raw_cursor(["after", "name", ["a", "b", "c"], 2, 3])},
     "cursor: not a cursor of this list"),
])
def test_bad_cursors_are_refused(params, message):
    with pytest.raises(BadFilter) as refused:
        PodFilters.parse(params)
    assert str(refused.value).startswith(message)


def test_the_namespaces_are_listed_once_each_in_order():
    for i, namespace in enumerate(["b", "a", "c", "a", "b"]):
        pod(f"p{i}", namespace=namespace)
    assert namespaces() == ["a", "b", "c"]


def test_assumed_rows_say_how_long_they_have_and_stuck_ones_stand_out(settings):
    old = T0 - timedelta(seconds=settings.SCHEDVIEW_BIND_STUCK_AFTER)
    pod("bound", "Assumed", binding_finished=True, deadline=NOW + 25, changed_at=old)
    pod("overdue", "Assumed", binding_finished=True, deadline=NOW - 3, changed_at=old)
    pod("binding", "Assumed", changed_at=T0)
    pod("stuck", "Assumed", changed_at=old)
    # Stuck from the moment it was assumed: the watch's updates since do not reset that.
    pod("relabelled", "Assumed", changed_at=T0, assumed_at=old)
    pod("added", "Added", changed_at=old)
    rows = {row.uid: row for row in query_pods(PodFilters(), NOW).rows}
    assert rows["bound"].expires_in == 25 and not rows["bound"].stuck
    assert rows["overdue"].expires_in == -3
    assert (rows["bound"].expiry, rows["overdue"].expiry) == ("expires in 25 s",
                                                              "expiry overdue by 3 s")
    assert rows["binding"].expires_in is None and not rows["binding"].stuck
    assert rows["stuck"].stuck and rows["stuck"].expires_in is None
    assert rows["relabelled"].stuck and rows["relabelled"].assumed_since == rows["stuck"].changed
    assert not rows["added"].stuck and rows["added"].expires_in is None
    assert rows["binding"].changed == "10 s ago"


def test_state_counts_follow_the_other_filters():
    pod("a", "Added", namespace="team")
    pod("b", "Assumed", namespace="team")
    pod("c", "Added", namespace="other")
    listing = query_pods(PodFilters(state="Added", namespace="team"), NOW)
    assert [row.uid for row in listing.rows] == ["a"]
    assert listing.counts == [("Pending", 0), ("Assumed", 1), ("Added", 1), ("Expired", 0),
                              ("Forgotten", 0)]


def test_a_page_costs_two_queries_whatever_the_rows(django_assert_num_queries):
    for i in range(120):
        pod(f"p{i:03}", "Added", namespace="team")
    with django_assert_num_queries(2):
        listing = query_pods(PodFilters(state="Added", namespace="team", q="p0"), NOW)
        assert len(listing.rows) == 50
    with django_assert_num_queries(2):        # the last page: the count and the page
        assert len(query_pods(PodFilters(cursor=listing.cursors["last"]), NOW).rows) == 20
    with django_assert_num_queries(3):        # a page after a cursor: also where it stands
        assert len(query_pods(PodFilters(cursor=listing.cursors["next"]), NOW).rows) == 50
