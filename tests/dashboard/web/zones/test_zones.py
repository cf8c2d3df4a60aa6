"""The zones page: the NodeTree's zones and nodes in list() order, with the round robin's
position as the owner reports it (NodeTree.position() in its status)."""
import pytest
from django.conf import settings

from schedcache import Cache
from schedcache.nodetree import NodeTree

from dashboard.owner.owner import CacheOwner
from dashboard.readmodel import read_model
from dashboard.web.nodes import reads as node_reads
from dashboard.wire.clients import redis_client
from dashboard.wire.keys import OWNER_STATUS
from tests.dashboard.web.nodes.nodepages import get, node, report_owner, resources, squash

pytestmark = pytest.mark.django_db
GIB = 1024**3


@pytest.fixture(autouse=True)
def no_owner(redis_url):
    redis_client(settings.REDIS_URL).delete(OWNER_STATUS)
    yield
    redis_client(settings.REDIS_URL).delete(OWNER_STATUS)


def zoned(name, zone):
    return {"metadata": {"name": name, "labels": {"topology.kubernetes.io/region": "region-1",
                                                  "topology.kubernetes.io/zone": zone}}}


def test_zones_group_the_node_tree_order(viewer_client):
    # Tree order (tree_index) interleaves zones; zone-c's node comes first in the tree.
    tree = [("c-0", "region-1/zone-c", 0), ("a-0", "region-1/zone-a", 1),
            ("b-0", "region-1/zone-b", 2), ("c-1", "region-1/zone-c", 3),
            ("a-1", "region-1/zone-a", 4), ("c-2", "region-1/zone-c", 5)]
    for name, zone, index in reversed(tree):
        node(name, zone, index, requested=resources(1000), allocatable=resources(4000))
    node("ghost", "", -1, requested=resources(500), allocatable=resources(), has_node=False)
    response, html = get(viewer_client, "/zones/")
    groups = response.context["tree"].zones
    assert [group.label for group in groups] == [
        "region-1/zone-c", "region-1/zone-a", "region-1/zone-b", "(not in the tree)"]
    assert [[(position, name) for position, name, _ in group.nodes] for group in groups] == [
        [(1, "c-0"), (4, "c-1"), (6, "c-2")], [(2, "a-0"), (5, "a-1")], [(3, "b-0")],
        [(0, "ghost")]]
    assert groups[0].cpu == read_model.Usage(3.0, 12.0, "cores")
    html = squash(html)
    # A zone's name leads to its nodes.
    assert '<a href="/nodes/?zone=region-1/zone-c">region-1/zone-c</a> <small>3 nodes</small>' in html
    assert '<span class="position">6</span> <a href="/nodes/c-2/">c-2</a>' in html
    assert html.index("c-2") < html.index("a-0") < html.index("b-0") < html.index("ghost")
    assert '<li class="missing"><span class="position">–</span> <a href="/nodes/ghost/">' in html
    assert "The round robin's position needs a live cache owner." in html


def test_zones_list_their_first_nodes_and_count_the_rest(viewer_client, monkeypatch):
    monkeypatch.setattr(node_reads, "ZONE_NODES_SHOWN", 2)
    for index, (name, zone) in enumerate([("a0", "a"), ("b0", "b"), ("a1", "a"), ("a2", "a"),
                                          ("a3", "a"), ("a4", "a")]):
        node(name, f"region-1/zone-{zone}", index)
    response, html = get(viewer_client, "/zones/")
    groups = response.context["tree"].zones
    assert [(g.label, g.count, [name for _, name, _ in g.nodes], g.more) for g in groups] == [
        ("region-1/zone-a", 5, ["a0", "a1"], 3), ("region-1/zone-b", 1, ["b0"], 0)]
    assert '… and 3 more: see <a href="/nodes/?zone=region-1/zone-a">Nodes</a>' in squash(html)


def test_the_owner_reports_where_the_round_robin_stands():
    cache = Cache()
    for name, zone in [("a0", "a"), ("b0", "b"), ("a1", "a")]:
        cache.add_node(zoned(name, zone))
    owner = CacheOwner(cache)
    assert owner.status()["round_robin"] == {
        "zone_index": 0, "zones": [["region-1/a", 0], ["region-1/b", 0]]}
    assert cache.node_tree.next() == "a0"
    assert owner.status()["round_robin"] == {
        "zone_index": 1, "zones": [["region-1/a", 1], ["region-1/b", 0]]}


@pytest.mark.parametrize("sizes, calls", [
    ({"a": 3, "b": 1}, 0), ({"a": 3, "b": 1}, 1), ({"a": 3, "b": 1}, 2),
    ({"a": 3, "b": 1}, 3), ({"a": 3, "b": 1}, 4), ({"a": 3, "b": 1}, 7),
    ({"a": 1, "b": 2, "c": 1}, 5), ({"a": 2}, 3)])
def test_the_pages_next_pick_is_what_next_returns(sizes, calls):
    """From NodeTree.position() alone, next_pick names the node next() returns: through
    rounds, exhausted zones and the reset when every zone is exhausted."""
    tree = NodeTree()
    for zone, size in sizes.items():
        for i in range(size):
            tree.add_node(zoned(f"{zone}{i}", zone))
    for _ in range(calls):
        tree.next()
    position = tree.position()
    zones = [(zone, index, len(tree.nodes_in(zone))) for zone, index in position["zones"].items()]
    zone, index = node_reads.next_pick(position["zone_index"], zones)
    assert tree.nodes_in(zone)[index] == tree.next()


def test_the_page_marks_the_zone_asked_next_and_each_zones_next_node(viewer_client):
    for index, (name, zone) in enumerate([("a0", "a"), ("b0", "b"), ("a1", "a")]):
        node(name, f"region-1/{zone}", index)
    # next() gave a0, then b0: zone b is exhausted, so a1 comes next.
    report_owner(round_robin={"zone_index": 0, "zones": [["region-1/a", 1], ["region-1/b", 1]]})
    response, html = get(viewer_client, "/zones/")
    tree = response.context["tree"]
    assert (tree.known, tree.next_zone, tree.next_node) == (True, "region-1/a", "a1")
    # Zone b's next node is past its one node: only zone a's is marked.
    assert [(g.label, g.next_index) for g in tree.zones] == [("region-1/a", 1),
                                                            ("region-1/b", 1)]
    html = squash(html)
    assert "asks zone <strong>region-1/a</strong> next, for <strong>a1</strong>" in html
    assert '<li class="zone asked-next">' in html
    assert ('<li class="next"><span class="position">3</span> <a href="/nodes/a1/">a1</a> '
            '<span class="next-mark"') in html


def test_a_node_in_the_tree_without_zone_labels(viewer_client):
    node("plain", "", 0)
    report_owner(round_robin={"zone_index": 0, "zones": [["", 0]]})
    tree = get(viewer_client, "/zones/")[0].context["tree"]
    assert [(g.label, g.count, g.nodes, g.next_index) for g in tree.zones] == [
        ("(no zone)", 1, [(1, "plain", True)], 0)]
    assert tree.next_node == "plain"
