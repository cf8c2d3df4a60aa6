"""The pages show the built-in example cluster's cache, with or without htmx."""
import re

import pytest

from dashboard.example_cluster import ASSUMED_PODS, example
from simcluster.generate import generate_cluster

CLUSTER = generate_cluster(nodes=12, pods=150, zones=3, seed=7)
NODE_NAMES = [node["metadata"]["name"] for node in CLUSTER.nodes]
ZONE_OF = {node["metadata"]["name"]: node["metadata"]["labels"]["topology.kubernetes.io/zone"]
           for node in CLUSTER.nodes}
PAGES = [("/", "counts"), ("/nodes/", "node-table"), ("/zones/", "zone-groups")]


def page(client, url, **headers):
    response = client.get(url, **headers)
    assert response.status_code == 200
    return response, response.content.decode()


def test_overview_counts(client):
    response, html = page(client, "/")
    overview = response.context["overview"]
    assert overview.nodes == 12
    assert overview.pods == len(CLUSTER.pods) + ASSUMED_PODS
    assert overview.assumed == ASSUMED_PODS
    # The snapshot was taken before the assumptions: it lags the cache.
    assert 0 < overview.snapshot_generation < overview.cache_generation == example().cache.generation
    for label, value in [("Nodes", 12), ("Assumed pods", ASSUMED_PODS),
                         ("Cache generation", overview.cache_generation),
                         ("Snapshot generation", overview.snapshot_generation)]:
        assert f"<dt>{label}</dt><dd>{value}</dd>" in html
    assert html.count("<meter") == 2  # cluster-wide cpu and memory


def test_nodes_table_has_a_row_and_two_bars_per_node(client):
    response, html = page(client, "/nodes/")
    for name in NODE_NAMES:
        assert f'<tr id="node-{name}">' in html
    assert html.count("<meter") == 2 * len(NODE_NAMES)
    rows = response.context["nodes"]
    assert sum(row.assumed for row in rows) == ASSUMED_PODS
    assert sum(row.pods for row in rows) == len(CLUSTER.pods) + ASSUMED_PODS
    for row in rows:
        assert f'value="{row.cpu.percent}"' in html
        assert f"{row.cpu.text} <small>({row.cpu.percent}%)</small>" in html


def test_zones_group_the_node_tree_order(client):
    response, html = page(client, "/zones/")
    groups = response.context["zones"]
    assert [group.label for group in groups] == ["region-1/zone-a", "region-1/zone-b", "region-1/zone-c"]
    tree_order = example().cache.node_tree.list()
    for group in groups:
        zone = group.label.split("/")[1]
        assert [name for _, name in group.nodes] == [name for name in tree_order if ZONE_OF[name] == zone]
        for position, name in group.nodes:
            assert tree_order[position - 1] == name
            assert f'<span class="position">{position}</span> {name}' in html
    assert sorted(name for group in groups for _, name in group.nodes) == sorted(NODE_NAMES)


@pytest.mark.parametrize("url, section", PAGES)
def test_an_htmx_request_gets_the_same_section_alone(client, url, section):
    _, whole = page(client, url)
    _, fragment = page(client, url, HTTP_HX_REQUEST="true")
    assert "<html" not in fragment
    assert fragment.strip().startswith(f'<section id="{section}">')
    assert fragment.strip() in whole


@pytest.mark.parametrize("url, _section", PAGES)
def test_pages_work_without_javascript(client, url, _section):
    """Every page links every other, and its refresh link is a plain link too."""
    _, html = page(client, url)
    for other, _ in PAGES:
        assert f'href="{other}"' in html
    assert re.search(rf'<a class="refresh" href="{url}"', html)
