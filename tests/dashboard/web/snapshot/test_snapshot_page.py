"""The snapshot page: the generation over time drawn from SnapshotSample, the nodes the
latest snapshot copied, the nodes changed since, and the most-recently-changed order."""
from datetime import timedelta

import pytest

from dashboard.web.snapshot import reads as snapshot_reads
from tests.dashboard.web.nodes.nodepages import T0, get, node, sample, squash

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _redis(redis_url):
    """The page's header reads the owner's status from Redis."""


def test_the_chart_is_a_step_line_of_the_snapshots_generation():
    samples = [sample(10, T0, cache_generation=10), sample(20, T0 + timedelta(seconds=5),
                                                           cache_generation=30)]
    chart = snapshot_reads.chart(samples, now=T0 + timedelta(seconds=10))
    # What uPlot draws: times in epoch seconds, one list of values a line, the first stepped.
    assert chart.data["times"] == [T0.timestamp(), T0.timestamp() + 5]
    assert [line["values"] for line in chart.data["lines"]] == [[10, 20], [10, 30]]
    assert chart.data["stepped"] and chart.data["unit"] == "generation"
    assert (chart.low, chart.high, chart.samples, chart.start) == (10, 30, 2, "10 s ago")


def test_one_sample_draws_no_chart():
    assert snapshot_reads.chart([sample(1, T0)], now=T0) is None


def test_the_page_splits_nodes_by_the_latest_snapshots_generation(viewer_client):
    node("old", generation=3)
    node("copied", generation=9)
    node("newer", generation=12)
    node("newest", generation=15, has_node=False)
    sample(5, T0, changed=["x"])
    sample(10, T0 + timedelta(seconds=1), changed=["copied"], cache_generation=11)
    response, html = get(viewer_client, "/snapshot/")
    page = response.context["snapshot"]
    assert (page.generation, page.cache_generation) == (10, 15)
    assert [n.name for n in page.pending] == ["newest", "newer"] and page.pending_count == 2
    assert page.copied == ["copied"]
    assert [n.name for n in page.recent] == ["newest", "newer", "copied", "old"]
    html = squash(html)
    assert "Generation 10" in html and "the cache is at 15" in html
    assert "<h2>Changed since this snapshot <small>2</small></h2>" in html
    pending = html.split('id="snapshot-pending">')[1].split("</section>")[0]
    assert pending.index("/nodes/newest/") < pending.index("/nodes/newer/")
    assert "/nodes/copied/" not in pending
    assert "deleted, pods left" in pending
    figure = html.split('<figure class="chart" id="snapshot-chart" data-chart-data="')[1]
    assert figure.split('"', 1)[0].count("&quot;times&quot;") == 1   # the data, escaped
    assert "vendor/uplot/uPlot.iife.min.js" in html and "charts.js" in html
    assert 'ws-connect="/ws/snapshot/"' in html


def test_before_any_snapshot(viewer_client):
    node("n1", generation=4)
    _, html = get(viewer_client, "/snapshot/")
    assert "No snapshot taken yet" in html and "<figure" not in html.split('id="snapshot-live"')[1]


def test_the_chart_shows_the_latest_samples_only(viewer_client, monkeypatch):
    monkeypatch.setattr(snapshot_reads, "CHART_SAMPLES", 3)
    for i in range(5):
        sample(i + 1, T0 + timedelta(seconds=i))
    page = get(viewer_client, "/snapshot/")[0].context["snapshot"]
    assert (page.chart.low, page.chart.high, page.chart.samples) == (3, 5, 3)


def test_an_htmx_refresh_gets_the_section_alone(viewer_client):
    sample(2, T0)
    _, whole = get(viewer_client, "/snapshot/")
    _, fragment = get(viewer_client, "/snapshot/", HTTP_HX_REQUEST="true")
    assert fragment.strip().startswith('<section id="snapshot-live">')
    assert fragment.strip() in whole



def test_long_lists_say_how_many_more_they_hold(viewer_client):
    for i in range(snapshot_reads.NODES_SHOWN + 30):
        node(f"n{i:03}", generation=10 + i)
    sample(5, T0, changed=[f"n{i:03}" for i in range(snapshot_reads.NODES_SHOWN + 7)])
    _, html = get(viewer_client, "/snapshot/")
    assert html.count("… and 30 more") == 2          # changed since, most recently changed
    assert "… and 7 more" in html                      # copied
    assert f"Copied by this snapshot <small>{snapshot_reads.NODES_SHOWN + 7}</small>" in html
