"""The pod query the pods page and the REST API share: validation, filters, sort, pages."""
from datetime import timedelta

import pytest
from django.http import QueryDict

from dashboard import pod_query
from dashboard.pod_query import (MAX_PER_PAGE, BadFilter, PodFilters,
                                 query_pods)
from podpages import T0, pod

pytestmark = pytest.mark.django_db

NOW = T0.timestamp() + 10


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


def test_pages_hold_per_page_rows_and_a_page_past_the_end_is_the_last():
    for i in range(7):
        pod(f"p{i}")
    listing = query_pods(PodFilters.parse({"per_page": "3", "page": "2"}), NOW)
    assert [row.uid for row in listing.rows] == ["p3", "p4", "p5"]
    assert listing.total == 7 and listing.page.paginator.num_pages == 3
    assert [row.uid for row in query_pods(PodFilters(per_page=3, page=99), NOW).rows] == ["p6"]


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


def test_the_count_stops_at_the_cap_and_so_do_the_pages(monkeypatch):
    monkeypatch.setattr(pod_query, "COUNT_CAP", 4)
    for i in range(6):
        pod(f"u{i}", "Added", name=f"p{i}")
    page = query_pods(PodFilters.parse({"per_page": "2", "page": "9"}), NOW)
    assert (page.total, page.total_capped) == (4, True)
    assert (page.page.number, page.page.paginator.num_pages) == (2, 2)   # no page past the cap
    exact = query_pods(PodFilters.parse({"q": "p1"}), NOW)
    assert (exact.total, exact.total_capped) == (1, False)
