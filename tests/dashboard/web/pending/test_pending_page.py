"""The Pending page (/pending/): a real cache owner, serving over the run's Redis, lists its
pending pods in kube-scheduler's queue order with positions, ages, first reasons and
counts; filters narrow it, paging slices it, bad input is a 400 and a login is needed."""
import html as html_lib
import re
from datetime import datetime, timezone

import pytest

from simcluster.generate import make_node

from dashboard.owner import pending_reasons
from dashboard.web.pending import query
from tests.dashboard.owner.queuepods import CPU, SELECTOR, queue_pods
from tests.dashboard.web.conftest import serving_owner
from tests.dashboard.web.nodes.nodepages import get, squash

pytestmark = pytest.mark.django_db(transaction=True)
FITS = pending_reasons.FITS


@pytest.fixture
def queue(redis_url, transactional_db):
    with serving_owner([make_node("n1", cpu="32")], queue_pods()) as owner:
        yield owner


def rows(html):
    """(position, name, reason) of the list's rows, in the page's order."""
    found = re.findall(r'<tr id="pending-[^"]+">\s*<td class="num">(\d+)</td>.*?'
                       r'<a href="/pods/[^"]+/">([^<]+)</a>.*?<td class="reason">([^<]*)</td>',
                       html, re.S)
    return [(int(position), name, html_lib.unescape(reason)) for position, name, reason in found]


def counts(html, title):
    block = re.search(rf"<h3>{title}</h3>(.*?)</table>", html, re.S)
    assert block, title
    cells = re.findall(r'<th scope="row">(?:<a [^>]*>)?([^<]*)(?:</a>)?</th><td class="num">'
                       r'(\d+)</td>', squash(block.group(1)))
    return [(html_lib.unescape(value), int(pods)) for value, pods in cells]


def test_the_queue_in_kube_schedulers_order_with_positions_ages_and_reasons(queue,
                                                                           viewer_client):
    _, html = get(viewer_client, "/pending/")
    assert rows(html) == [(1, "big", CPU), (2, "b", FITS), (3, "a", FITS), (4, "d", SELECTOR),
                          (5, "e", CPU)]
    assert "This is the queue's sort, not a promise" in squash(html)
    assert "5 pending pods" in html
    assert re.search(r'<td class="muted">\d+ (s|min|h)</td>', html)     # an age


def test_the_counts_by_reason_namespace_and_priority(queue, viewer_client):
    _, html = get(viewer_client, "/pending/")
    assert counts(html, "By reason") == [(CPU, 2), (FITS, 2), (SELECTOR, 1)]
    assert counts(html, "By namespace") == [("team", 3), ("batch", 2)]
    assert counts(html, "By priority") == [("100", 1), ("10", 2), ("0", 2)]


def test_filters_by_reason_and_namespace_keep_queue_positions(queue, viewer_client):
    _, html = get(viewer_client, "/pending/?reason=Insufficient+cpu")
    assert rows(html) == [(1, "big", CPU), (5, "e", CPU)]
    assert "2 pending pods matching, of 5" in html
    _, html = get(viewer_client, "/pending/?reason=Insufficient+cpu&namespace=team")
    assert rows(html) == [(5, "e", CPU)]
    _, html = get(viewer_client, "/pending/?namespace=nobody")
    assert rows(html) == [] and "No pending pods match these filters" in html


def test_a_reason_in_the_counts_links_to_its_filter(queue, viewer_client):
    _, html = get(viewer_client, "/pending/")
    assert 'href="?reason=Insufficient+cpu"' in html
    assert 'href="?namespace=batch"' in html
    _, html = get(viewer_client, "/pending/?reason=Insufficient+cpu")     # chosen: unfilters
    assert re.search(r'<a href="\?" [^>]*aria-current="true">Insufficient cpu</a>', html)
    assert 'href="?reason=Insufficient+cpu&amp;namespace=batch"' in html


def test_pages_slice_the_queue(queue, viewer_client):
    _, html = get(viewer_client, "/pending/?per_page=2&page=2")
    assert rows(html) == [(3, "a", FITS), (4, "d", SELECTOR)]
    assert "Page 2 of 3" in html and 'href="?per_page=2&amp;page=3"' in html
    response, html = get(viewer_client, "/pending/?per_page=2&page=2", HTTP_HX_REQUEST="true")
    assert html.lstrip().startswith('<section id="pending-list"')    # the fragment alone


@pytest.mark.parametrize("url, words", [
    ("/pending/?page=4&per_page=2", "page: 4 is past the last page, 3"),
    ("/pending/?page=zero", "page: expected a whole number"),
    ("/pending/?per_page=501", "per_page: between 1 and 500"),
    ("/pending/?reason=" + "x" * 254, "reason: at most 253 characters"),
    ("/pending/?namespace=a%01b", "namespace: control characters are not allowed"),
])
def test_a_bad_filter_is_a_400_that_lists_nothing(queue, viewer_client, url, words):
    _, html = get(viewer_client, url, status=400)
    assert words in html and "Nothing was listed" in html
    assert rows(html) == []


def test_without_an_owner_the_page_says_so(viewer_client, redis_url, monkeypatch):
    monkeypatch.setattr(query, "TIMEOUT", 0.3)
    _, html = get(viewer_client, "/pending/", status=503)
    assert "did not answer" in html


def test_the_page_needs_a_login(client, redis_url):
    response = client.get("/pending/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_the_header_and_the_overviews_pending_card_link_to_it(queue, viewer_client):
    _, html = get(viewer_client, "/pending/")
    assert '<a href="/pending/" aria-current="page">Pending</a>' in html
    _, html = get(viewer_client, "/")
    assert re.search(r'<dt><a href="/pending/"[^>]*>Pending</a></dt>', html)



@pytest.mark.parametrize("created, age", [("2026-11-01T00:00:00Z", "4 min"),
                                          ("yesterday", ""), (None, "")])
def test_an_age_is_read_from_the_creation_time_and_an_odd_one_left_blank(created, age):
    now = datetime(2026, 11, 1, 0, 4, tzinfo=timezone.utc)
    assert query._age(created, now) == age
