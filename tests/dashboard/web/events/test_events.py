"""The events page: transitions from the history, newest first, filtered by kind, namespace,
node and cause; a filter that can match nothing is refused with a 400 page."""
from datetime import timedelta
from html import unescape

import pytest
from django.http import QueryDict

from dashboard.models import Transition
from dashboard.web.events import reads as event_reads
from tests.dashboard.web.nodes.nodepages import T0, event, get, transition

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _redis(redis_url):
    """The page's header reads the owner's status from Redis."""


def seqs(html):
    return [int(part.split('"')[0]) for part in html.split('<tr id="event-')[1:]]


def some_history():
    transition(1, "pod_assumed", namespace="web", node="n1", cause="operator", actor="alice",
               from_state="Initial", to_state="Assumed")
    transition(2, "pod_binding_finished", namespace="web", node="n1", cause="bind",
               from_state="Assumed", to_state="Assumed")
    transition(3, "pod_added", namespace="batch", node="n2")
    transition(4, "node_updated", key="n2", namespace="", name="n2", node="",
               from_state="", to_state="")
    transition(5, "pod_expired", namespace="web", node="n2", cause="reaper",
               from_state="Assumed", to_state="Expired")


def test_the_stream_is_newest_first_with_links_and_a_cursor(viewer_client):
    some_history()
    response, html = get(viewer_client, "/events/")
    assert seqs(html) == [5, 4, 3, 2, 1]
    assert response.context["events"].cursor == 5
    assert 'data-seq="5"' in html and 'ws-connect="/ws/events/"' in html
    first = html.split('<tr id="event-1"')[1].split("</tr>")[0]
    assert '<a href="/pods/uid-1/">web/pod-1</a>' in first
    assert "Initial → Assumed" in first and "operator" in first and "alice" in first
    assert '<a href="/nodes/n2/">n2</a>' in html.split('<tr id="event-4"')[1].split("</tr>")[0]


@pytest.mark.parametrize("query, expected", [
    ("kind=pod_expired", [5]),
    ("namespace=web", [5, 2, 1]),
    ("node=n1", [2, 1]),
    ("node=n2", [5, 4, 3]),             # its pods' events and its own
    ("cause=bind", [2]),
    ("namespace=web&node=n2", [5]),
    ("namespace=web&cause=watch", []),
])
def test_filters_narrow_the_stream_and_the_socket(viewer_client, query, expected):
    some_history()
    _, html = get(viewer_client, f"/events/?{query}")
    assert seqs(html) == expected
    assert f'ws-connect="/ws/events/?{query}"'.replace("&", "&amp;") in html
    if not expected:
        assert "No matching events yet." in html


@pytest.mark.parametrize("query, says", [
    ("kind=pod_exploded", "unknown kind 'pod_exploded'"),
    ("cause=gremlins", "unknown cause 'gremlins'"),
    ("namespace=Not_A_Namespace", "is not a namespace name"),
    ("node=" + "x" * 300, "is not a node name"),
])
def test_a_filter_that_can_match_nothing_is_refused(viewer_client, query, says):
    some_history()
    _, html = get(viewer_client, f"/events/?{query}", status=400)
    assert says in unescape(html) and 'class="error"' in html
    assert "ws-connect=\"/ws/events/" not in html and "<tr id=\"event-" not in html


def test_the_page_shows_the_newest_hundred(viewer_client, monkeypatch):
    monkeypatch.setattr(event_reads, "EVENTS_SHOWN", 3)
    for seq in range(1, 8):
        transition(seq)
    assert seqs(get(viewer_client, "/events/")[1]) == [7, 6, 5]


def test_an_htmx_filter_gets_the_section_alone(viewer_client):
    some_history()
    _, whole = get(viewer_client, "/events/?cause=bind")
    _, fragment = get(viewer_client, "/events/?cause=bind", HTTP_HX_REQUEST="true")
    assert fragment.strip().startswith('<section id="event-list"')
    assert fragment.strip() in whole


def test_the_filter_agrees_with_itself_in_sql_and_on_pushed_events():
    """The page filters the history in SQL, the socket filters pushed events in Python."""
    some_history()
    pushed = {row.seq: row for row in Transition.objects.all()}
    for query in ["", "kind=pod_added", "namespace=web", "node=n2", "node=n2&kind=node_updated",
                  "cause=reaper",
                  "namespace=web&node=n1&cause=operator"]:
        event_filter = event_reads.EventFilter.from_query(QueryDict(query))
        in_sql = sorted(event_filter.apply(Transition.objects.all()).values_list("seq", flat=True))
        in_python = [seq for seq, row in sorted(pushed.items()) if event_filter.matches(
            event(seq, row.kind, key=row.key, namespace=row.namespace, node=row.node,
                  cause=row.cause))]
        assert in_sql, query
        assert in_sql == in_python, query
    assert not event_reads.EventFilter().matches(event(9, "snapshot_updated"))


def test_catching_up_returns_what_came_after_a_cursor():
    for seq in range(1, 11):
        transition(seq, namespace="web" if seq % 2 else "batch")
    web = event_reads.EventFilter(namespace="web")
    rows, top, more = event_reads.events_between(web, 4)
    assert ([r.seq for r in rows], top, more) == ([5, 7, 9], 10, False)
    rows, top, more = event_reads.events_between(web, 0, limit=2)
    assert ([r.seq for r in rows], more) == ([1, 3], True)
    rows, top, _ = event_reads.events_between(web, 4, before=8)
    assert ([r.seq for r in rows], top) == ([5, 7], 7)


def test_an_owner_taking_over_is_an_event_of_its_own(viewer_client):
    some_history()
    transition(6, "owner_leading", key="owner-b", namespace="", name="owner-b", node="",
               cause="owner", actor="owner-b", from_state="", to_state="")
    _, html = get(viewer_client, "/events/?kind=owner_leading")
    assert seqs(html) == [6]
    row = html.split('<tr id="event-6"')[1].split("</tr>")[0]
    assert "owner-b" in row and "/nodes/owner-b/" not in row and "/pods/" not in row


def test_a_forget_is_named_as_the_pods_timeline_names_it(viewer_client):
    transition(1, "pod_forgotten", key="uid-f", namespace="web", node="n1", cause="bind",
               from_state="Assumed", to_state="Initial")
    _, events = get(viewer_client, "/events/")
    _, timeline = get(viewer_client, "/pods/uid-f/")
    assert "Assumed → Forgotten" in events and "Assumed → Initial" not in events
    assert "Assumed → Forgotten" in timeline


REFUSED = ('binding answered 500 Internal Server Error: etcdserver: request timed out '
           '(after 3 attempts)')


def test_a_failed_binds_cause_is_on_the_events_page_and_the_pods_timeline(viewer_client):
    """Issue 23: the API server's answer (status and message), not only "bind"."""
    transition(1, "pod_forgotten", key="uid-f", namespace="web", node="n1", cause="bind",
               from_state="Assumed", to_state="Initial", detail=REFUSED)
    transition(2, "pod_added", key="uid-f", namespace="web", node="n1")
    _, events = get(viewer_client, "/events/")
    forgotten = events.split('<tr id="event-1"')[1].split("</tr>")[0]
    assert f'<div class="cause-detail">{REFUSED}</div>' in unescape(forgotten)
    assert "cause-detail" not in events.split('<tr id="event-2"')[1].split("</tr>")[0]
    _, timeline = get(viewer_client, "/pods/uid-f/")
    assert f'bind result<div class="cause-detail">{REFUSED}</div>' in unescape(timeline)
    # a live page's row, from the owner's push, says the same
    assert event_reads.row_of(event(3, "pod_forgotten", detail=REFUSED)).detail == REFUSED


def older_link(html):
    """The pager's "Older →" query string, or None on the last page."""
    if 'rel="next"' not in html:
        return None
    return unescape(html.split('rel="next"')[0].rsplit('href="?', 1)[1].split('"')[0])


def test_paging_back_reaches_the_oldest_row_and_only_the_newest_page_is_live(
        viewer_client, monkeypatch):
    monkeypatch.setattr(event_reads, "EVENTS_SHOWN", 3)
    for seq in range(1, 9):
        transition(seq, namespace="web" if seq != 4 else "batch")
    _, html = get(viewer_client, "/events/?namespace=web")
    pages = [seqs(html)]
    assert 'ws-connect="/ws/events/?namespace=web"' in html and 'rel="first"' not in html
    assert 'id="events-pause"' in html
    while (query := older_link(html)) is not None:
        _, html = get(viewer_client, f"/events/?{query}")
        assert "namespace=web" in query and "/ws/events/" not in html   # still, filtered
        assert 'id="events-pause"' not in html
        assert 'href="/events/?namespace=web" rel="first"' in html
        pages.append(seqs(html))
    assert pages == [[8, 7, 6], [5, 3, 2], [1]]


def test_a_page_cut_past_the_newest_rows_is_still_under_the_cursor(viewer_client):
    for seq in range(1, 4):
        transition(seq)
    response, html = get(viewer_client, "/events/?before=3")
    assert seqs(html) == [2, 1] and response.context["events"].next_before is None
    assert 'id="events-cursor"' not in html


@pytest.mark.parametrize("cut", ["x", "-1", "0", "1.5", "९", str(2**63)])
def test_a_bad_page_cut_is_refused(viewer_client, cut):
    _, html = get(viewer_client, f"/events/?before={cut}", status=400)
    assert "before: a sequence number" in unescape(html)


def three_pods_and_a_node():
    """Three pods and a node, a second apart from T0 (12:00 UTC); two updates change nothing."""
    transition(1, "pod_added", key="uid-a", namespace="web", name="a", node="n1")
    transition(2, "pod_updated", key="uid-a", namespace="web", name="a", node="n1",
               from_state="Added", to_state="Added")
    transition(3, "pod_assumed", key="uid-b", namespace="web", name="b", node="n2",
               cause="operator", actor="alice", from_state="Initial", to_state="Assumed")
    transition(4, "pod_binding_finished", key="uid-b", namespace="web", name="b", node="n2",
               cause="bind", actor="alice", from_state="Assumed", to_state="Assumed")
    transition(5, "node_updated", key="uid-a", namespace="", name="uid-a", node="",
               from_state="", to_state="")        # a node named as a pod's uid
    transition(6, "pod_updated", key="uid-c", namespace="batch", name="a", node="n1",
               from_state="Added", to_state="Added", actor="bob")
    transition(7, "pod_expired", key="uid-b", namespace="web", name="b", node="n2",
               cause="reaper", from_state="Assumed", to_state="Expired")


FILTERS = [
    ("", [7, 5, 4, 3, 1]),                           # no-change updates hidden
    ("unchanged=shown", [7, 6, 5, 4, 3, 2, 1]),
    ("actor=alice", [4, 3]),
    ("actor=alice&cause=bind", [4]),
    ("pod=uid-a", [1]),                              # a pod's events, not a node's
    ("pod=uid-a&unchanged=shown", [2, 1]),
    ("pod=web/b", [7, 4, 3]),
    ("pod=web/a&unchanged=shown", [2, 1]),
    ("pod=batch/a&unchanged=shown&actor=bob", [6]),
    ("since=2026-01-01T12:00:03Z", [7, 5, 4, 3]),
    ("until=2026-01-01T12:00:04%2B00:00", [4, 3, 1]),
    ("since=2026-01-01T12:00:03&until=2026-01-01T12:00:05&node=n2", [4, 3]),
    ("since=2026-01-01T13:00:03%2B01:00&until=2026-01-01T12:00:03Z", [3]),
    ("namespace=web&kind=pod_updated&unchanged=shown", [2]),
    ("namespace=web&kind=pod_updated", []),
]


@pytest.mark.parametrize("query, expected", FILTERS)
def test_the_new_filters_combine(viewer_client, query, expected):
    three_pods_and_a_node()
    _, html = get(viewer_client, f"/events/?{query}")
    assert seqs(html) == expected, query
    assert ("No-change updates (Added → Added) are hidden." in html) == \
        ("unchanged=shown" not in query)


def test_every_filter_agrees_in_sql_and_on_pushed_events():
    three_pods_and_a_node()
    pushed = {row.seq: row for row in Transition.objects.all()}
    for query, expected in FILTERS:
        event_filter = event_reads.EventFilter.from_query(QueryDict(query))
        in_sql = sorted(event_filter.apply(Transition.objects.all()).values_list("seq", flat=True))
        in_python = [seq for seq, row in sorted(pushed.items()) if event_filter.matches(event(
            seq, row.kind, key=row.key, namespace=row.namespace, name=row.name, node=row.node,
            cause=row.cause, actor=row.actor, from_state=row.from_state,
            to_state=row.to_state, at=row.at.timestamp()))]
        assert in_sql == in_python == sorted(expected), query


def test_the_filter_keeps_itself_in_its_links_and_its_form(viewer_client):
    three_pods_and_a_node()
    _, html = get(viewer_client, "/events/?actor=alice&since=2026-01-01T12:00:03Z"
                                 "&unchanged=shown&pod=web/b")
    socket_url = unescape(html.split('ws-connect="')[2].split('"')[0])
    assert event_reads.EventFilter.from_query(QueryDict(socket_url.split("?")[1])) == \
        event_reads.EventFilter(actor="alice", pod="web/b", unchanged=True,
                                since=T0 + timedelta(seconds=3))
    assert 'name="unchanged" value="shown" checked' in html
    assert 'value="2026-01-01T12:00:03+00:00"' in html and 'value="web/b"' in html


@pytest.mark.parametrize("query, says", [
    ("actor=" + "x" * 151, "actor: at most 150 printable characters"),
    ("actor=a%07b", "actor: at most 150 printable characters"),
    ("pod=Web/a", "pod: a uid or namespace/name, not 'Web/a'"),
    ("pod=web/", "pod: a uid or namespace/name"),
    ("pod=a b", "pod: a uid or namespace/name"),
    ("since=yesterday", "since: an ISO time such as"),
    ("until=2026-13-01", "until: an ISO time such as"),
    ("since=2026-01-02&until=2026-01-01", "since: a time before until"),
    ("unchanged=yes", "unchanged: 'shown' or nothing"),
])
def test_a_bad_new_filter_is_a_400_saying_why(viewer_client, query, says):
    three_pods_and_a_node()
    _, html = get(viewer_client, f"/events/?{query}", status=400)
    assert says in unescape(html) and "<tr id=\"event-" not in html
