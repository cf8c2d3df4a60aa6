"""The nodes table's filters and sorts, and the heat map: its cells, levels, legend, and
its live pushes of the cells that moved."""
import re

import pytest

from dashboard.models import NodeRecord
from dashboard.web.nodes import heatmap, reads
from dashboard.web.nodes.heatmap import heat_map, level
from dashboard.web.nodes.query import BadNodeFilter, NodeFilters
from tests.dashboard.web.nodes.nodepages import get, node, pod

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _redis(redis_url):
    """Pages read the owner's status from Redis."""


@pytest.fixture
def cluster():
    node("a1", "zone-a", labels={"pool": "web", "gpu": "no"}, cpu_percent=90.0,
         memory_percent=10.0)
    node("a2", "zone-a", labels={"pool": "batch"}, cpu_percent=20.0, memory_percent=60.0,
         taints=[{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}])
    node("b1", "zone-b", labels={"pool": "gpu"}, cpu_percent=50.0, memory_percent=50.0,
         gpu_percent=75.0, taints=[{"key": "nvidia.com/gpu", "value": "", "effect": "NoSchedule"}])


def names(**params):
    return [record.name for record in NodeFilters.parse(params).records()]


def test_nodes_filter_by_zone_label_taint_and_use(cluster):
    assert names(zone="zone-a") == ["a1", "a2"]
    assert names(label="pool=batch") == ["a2"]
    assert names(label="gpu") == ["a1"]                 # has the label, whatever its value
    assert names(taint="NOSCHEDULE") == ["a2", "b1"]     # any case
    assert names(taint="nvidia") == ["b1"]
    assert names(use="cpu", above="50") == ["a1", "b1"]
    assert names(use="gpu", above="1") == ["b1"]
    assert names(zone="zone-a", above="50") == ["a1"]


def test_the_nodes_count_by_the_zones_totals_or_by_their_filters(cluster):
    """Unfiltered or by zone, the page's total is the zones' totals' (no scan of the rows);
    any other filter counts its rows; the deleted nodes with pods left are counted of all."""
    node("gone", "zone-b", -1, has_node=False)
    NodeRecord.objects.filter(name="a2").update(zone="zone-b")      # a row moves zone
    assert (reads.nodes().total, reads.nodes().missing) == (4, 1)
    assert reads.nodes(NodeFilters.parse({"zone": "zone-b"})).total == 3
    assert reads.nodes(NodeFilters.parse({"zone": "zone-a"})).total == 1
    assert reads.nodes(NodeFilters.parse({"zone": "zone-a", "taint": "x"})).total == 0
    assert reads.nodes(NodeFilters.parse({"label": "pool"})).total == 3


def test_nodes_sort_by_use_with_nodes_lacking_the_resource_last(cluster):
    assert names(sort="-cpu") == ["a1", "b1", "a2"]
    assert names(sort="memory") == ["a1", "b1", "a2"]
    assert names(sort="gpu") == ["b1", "a1", "a2"] == names(sort="-gpu")[:1] + ["a1", "a2"]
    assert names(sort="-zone") == ["b1", "a1", "a2"]


@pytest.mark.parametrize("params, message", [
    ({"use": "disk"}, "use: one of cpu, memory, gpu"),
    ({"above": "-1"}, "above: between 0 and 1000"),
    ({"above": "lots"}, "above: expected a whole number"),
    ({"sort": "colour"}, "sort: unknown sort 'colour'"),
    ({"label": "=x"}, "label: a key, or key=value"),
    ({"taint": "a\x00"}, "taint: control characters"),
])
def test_bad_node_filters_are_refused(params, message):
    with pytest.raises(BadNodeFilter, match=re.escape(message)):
        NodeFilters.parse(params)


def test_the_nodes_page_filters_sorts_and_keeps_the_query_on_its_socket(viewer_client, cluster):
    response, html = get(viewer_client, "/nodes/?zone=zone-a&sort=-cpu")
    assert [row.name for row in response.context["nodes"].rows] == ["a1", "a2"]
    assert "<h2>2 nodes matching</h2>" in html
    assert 'ws-connect="/ws/nodes/?zone=zone-a&amp;sort=-cpu"' in html
    assert 'aria-sort="descending"><a href="?zone=zone-a&amp;sort=cpu"' in html
    assert '<option value="zone-b">zone-b</option>' in html
    _, html = get(viewer_client, "/nodes/?above=500&use=disk", status=400)
    assert "use: one of cpu, memory, gpu" in html


def test_the_table_says_what_explains_a_node_and_sorts_by_assumed_pods(viewer_client, cluster):
    """Sorting by CPU put `dedicated=infra` nodes first with no visible reason: Ready,
    cordon and taints are columns; Assumed sorts; an Extended column only with them."""
    NodeRecord.objects.filter(name="a1").update(unschedulable=True, conditions=[
        {"type": "Ready", "status": "False", "reason": "KubeletNotReady"}])
    NodeRecord.objects.filter(name="a2").update(conditions=[{"type": "Ready", "status": "True"}])
    for i in range(3):
        pod(f"x{i}", "Assumed", node="a2")
    pod("y0", "Assumed", node="b1")
    assert names(sort="-assumed") == ["a2", "b1", "a1"]
    assert names(sort="assumed") == ["a1", "b1", "a2"]
    response, html = get(viewer_client, "/nodes/?zone=zone-a")
    rows = {row.name: row for row in response.context["nodes"].rows}
    assert (rows["a1"].ready, rows["a1"].cordoned, rows["a2"].ready) == (False, True, True)
    assert rows["a2"].taints == (("dedicated", "batch", "NoSchedule"),)
    assert '<span class="badge bad">NotReady</span> <span class="badge warn" ' in html
    assert '<code class="label">dedicated=<wbr>batch:<wbr>NoSchedule</code>' in html
    assert '<a href="/nodes/?zone=zone-a" title="zone-a">zone-a</a>' in html
    assert ">Extended<" not in html                        # no node of the page has any
    assert re.search(r'<th scope="col" class="num"><a href="\?zone=zone-a&amp;sort=assumed"', html)
    _, html = get(viewer_client, "/nodes/")
    assert ">Extended<" not in html    # b1's GPUs come from gpu_percent only, no scalar
    assert get(viewer_client, "/nodes/?sort=-assumed")[0].status_code == 200


def test_levels_step_at_the_thresholds():
    # Ten steps: memory at 12-33 % on every node was one colour with a first step at 50 %.
    assert [level(p) for p in (None, 0, 9.9, 12, 25, 33, 50, 85, 95, 100, 100.1)] == [
        "none", "0", "0", "1", "2", "3", "5", "8", "9", "9", "over"]


def test_the_heat_map_draws_one_cell_per_node_by_zone_with_a_legend(viewer_client, cluster):
    response, html = get(viewer_client, "/heatmap/?metric=gpu")
    assert re.findall(r'<a id="heat-([^"]+)" class="h-([^"]+)" href="/nodes/\1/"', html) == [
        ("a1", "none"), ("a2", "none"), ("b1", "7")]
    assert 'title="b1: 75% of its GPUs requested"' in html and 'title="a1: no GPUs"' in html
    assert re.search(r'<i class="h-none"></i> no GPUs <small class="muted">2</small>', html)
    assert 'ws-connect="/ws/heatmap/?metric=gpu"' in html
    _, html = get(viewer_client, "/heatmap/")
    assert re.search(r'id="heat-a1" class="h-9"', html)       # CPU by default: 90%
    _, html = get(viewer_client, "/heatmap/?metric=disk", status=400)
    assert "metric: one of cpu, memory, gpu" in html


def test_a_push_sends_only_the_cells_that_moved_and_redraws_when_nodes_come():
    node("a1", cpu_percent=10.0)
    node("a2", cpu_percent=10.0)
    before = heat_map("cpu")
    NodeRecord.objects.filter(name="a2").update(cpu_percent=97.0)
    after = heat_map("cpu")
    assert [cell.name for cell in heatmap.changes(before, after)] == ["a2"]
    assert heatmap.changes(after, after) == []
    node("a3")
    assert heatmap.changes(after, heat_map("cpu")) is None


def test_a_cells_name_is_escaped():
    html = heatmap.cells_html([heatmap.HeatCell('n"><script>', 5.0, "cpu")])
    assert "<script>" not in html and 'id="heat-n&quot;&gt;&lt;script&gt;"' in html
