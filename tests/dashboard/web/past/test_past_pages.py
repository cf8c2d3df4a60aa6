"""The pages as the cluster was: after the scripted owner run (tests/dashboard/readmodel/
scripted_run.py) the overview, the nodes page and each node's page read `?at=` a step's
moment show what the read model held then, under the banner and with no live socket; a
moment before what is kept is a 410 page, an `at` that names none a 400 page; the diff page
lists what changed."""
import re

import pytest

from dashboard.models import Checkpoint
from tests.dashboard.web.past.pastpages import page

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_pages_at_each_moment_show_what_was_live_then(viewer_client, run):
    for seq, live, counts in run:
        overview = page(viewer_client, f"/?at={seq}")
        assert f"(seq {seq}) — <a href=\"/\">back to live</a>" in overview
        assert "ws-connect" not in overview          # nothing live on the past
        cards = dict(re.findall(r"<dt>(Assumed|Added)</dt><dd>([\d,]+)</dd>", overview))
        assert {state: int(n.replace(",", "")) for state, n in cards.items()} == counts, seq
        nodes = page(viewer_client, f"/nodes/?at={seq}")
        assert "ws-connect" not in nodes
        listed = re.findall(r'<a href="/nodes/([^/]+)/\?at=(\d+)">', nodes)
        assert sorted(listed) == sorted((name, str(seq)) for name in live["nodes"]), seq
        for name, node in live["nodes"].items():
            detail = page(viewer_client, f"/nodes/{name}/?at={seq}")
            pods = re.findall(r'<tr><th scope="row">team/([^<]+)</th><td>(\w+)', detail)
            assert sorted(state for _, state in pods) == sorted(
                state for pod_node, state, *_ in live["pods"].values() if pod_node == name)
            assert f"<dt>Pods</dt><dd>{node['pods']}</dd>" in detail


def test_the_zones_page_at_a_moment(viewer_client, run):
    seq = run[10][0]     # n1 deleted with pods left, n4 added in zone-c
    zones = page(viewer_client, f"/zones/?at={seq}")
    assert "ws-connect" not in zones and f"(seq {seq})" in zones
    groups = re.findall(r"<li><strong>([^<]+)</strong>: (.*)</li>", zones)
    assert [(zone, re.findall(r">(n\d)</a>", names)) for zone, names in groups] == [
        ("region-1/zone-a", ["n3"]), ("region-1/zone-b", ["n2"]), ("region-1/zone-c", ["n4"])]
    assert re.search(r"Deleted with pods left: <a href=\"/nodes/n1/\?at=", zones)


def test_before_what_is_kept_is_a_410_page_and_a_bad_at_a_400_page(viewer_client, run):
    oldest = Checkpoint.objects.order_by("seq").first()
    gone = page(viewer_client, f"/nodes/?at={oldest.seq - 1}", status=410)
    assert "before the oldest moment kept" in gone and f"seq {oldest.seq}" in gone
    bad = page(viewer_client, "/?at=last+tuesday", status=400)
    assert "neither a sequence number nor an ISO 8601 time" in bad
    assert "no node &#x27;nowhere&#x27; in the cache then" in page(
        viewer_client, f"/nodes/nowhere/?at={run[0][0]}", status=404)


def test_the_header_offers_the_picker_and_live(viewer_client, run):
    live = page(viewer_client, "/nodes/")
    assert 'class="moment-picker"' in live and 'action="/nodes/"' in live
    past = page(viewer_client, f"/nodes/?at={run[2][0]}")
    assert 'class="live-link" href="/nodes/">live</a>' in past


def test_the_diff_page(viewer_client, run):
    assert 'name="from"' in page(viewer_client, "/diff/")
    found = page(viewer_client, f"/diff/?from={run[0][0]}&to={run[6][0]}")
    assert "Pods that appeared (1)" in found and "team/w1 on n1 (Added)" in found
    assert "is after to" in page(viewer_client, f"/diff/?from={run[6][0]}&to={run[0][0]}",
                                 status=400)
