"""NodeTree: zone keys as upstream's GetZoneKey builds them, list() interleaved zone by
zone, next() round robin over zones (upstream's), and the cache keeping it in step."""

import pytest

from schedcache import Cache

import tests.schedcache.builders as b
import tests.schedcache.reference as ref

# The upstream node table (node_tree_test.go), rebuilt with our builders.
ALL = [
    b.node("node-0"),  # no region/zone label
    b.node("node-1", region="region-1"),  # region only
    b.node("node-2", zone="zone-2"),  # zone only
    b.node("node-3", region="region-1", zone="zone-2"),
    b.node("node-4", region="region-1", zone="zone-2"),
    b.node("node-5", region="region-1", zone="zone-3"),
    b.node("node-6", region="region-2", zone="zone-2"),
    b.node("node-7", region="region-2", zone="zone-2"),
    b.node("node-8", region="region-2", zone="zone-2"),
    # node-9: stable and deprecated labels both present
    b.node("node-9", labels={**b.zone_labels("region-2", "zone-2"), **b.zone_labels("region-2", "zone-2", beta=True)}),
    b.node("node-10", region="region-2", zone="zone-3", beta=True),  # deprecated labels only
]


def z(region, zone):
    return region + ":\x00:" + zone


def new_tree():
    """A NodeTree of its own: a fresh cache's tree, driven directly."""
    return Cache(ttl=0).node_tree


def tree_view(t):
    return {"num": t.num_nodes, "zones": list(t.zones), "list": list(t.list())}


ZONE_KEYS = [
    ("no labels", {}, ""),
    ("region only", b.zone_labels("r1"), z("r1", "")),
    ("zone only", b.zone_labels(zone="z1"), z("", "z1")),
    ("both", b.zone_labels("r1", "z1"), z("r1", "z1")),
    ("beta both", b.zone_labels("r1", "z1", beta=True), z("r1", "z1")),
    (
        "beta wins over topology",
        {**b.zone_labels("r-new", "z-new"), **b.zone_labels("r-old", "z-old", beta=True)},
        z("r-old", "z-old"),
    ),
    ("beta zone with topology region", {b.BETA_ZONE: "zb", b.TOPO_REGION: "rt"}, z("rt", "zb")),
    ("topology zone with beta region", {b.TOPO_ZONE: "zt", b.BETA_REGION: "rb"}, z("rb", "zt")),
    ("unrelated labels", {"disk": "ssd"}, ""),
    ("zone label with a colon", b.zone_labels("r:1", "z:1"), z("r:1", "z:1")),
]


@pytest.mark.parametrize("labels,key", [t[1:] for t in ZONE_KEYS], ids=[t[0] for t in ZONE_KEYS])
def test_zone_key(labels, key):
    t = new_tree()
    t.add_node(b.node("n", labels=labels))
    assert list(t.zones) == [key]
    assert ref.zone_key(b.node("n", labels=labels)) == key


ADD_CASES = [
    ("single node no labels", [0], {"": ["node-0"]}),
    ("same node twice", [0, 0], {"": ["node-0"]}),
    (
        "mix of nodes with and without labels",
        [0, 1, 2, 3],
        {"": ["node-0"], z("region-1", ""): ["node-1"], z("", "zone-2"): ["node-2"], z("region-1", "zone-2"): ["node-3"]},
    ),
    (
        "some zones with several nodes",
        [0, 1, 2, 3, 4, 5, 6],
        {
            "": ["node-0"],
            z("region-1", ""): ["node-1"],
            z("", "zone-2"): ["node-2"],
            z("region-1", "zone-2"): ["node-3", "node-4"],
            z("region-1", "zone-3"): ["node-5"],
            z("region-2", "zone-2"): ["node-6"],
        },
    ),
    ("deprecated labels", [9, 10], {z("region-2", "zone-2"): ["node-9"], z("region-2", "zone-3"): ["node-10"]}),
]


def _check_tree(t, expected, zone_order):
    assert t.num_nodes == sum(len(v) for v in expected.values())
    assert list(t.zones) == zone_order
    assert set(t.list()) == {n for v in expected.values() for n in v}


@pytest.mark.parametrize("adds,expected", [c[1:] for c in ADD_CASES], ids=[c[0] for c in ADD_CASES])
def test_add(adds, expected):
    t = new_tree()
    for i in adds:
        t.add_node(ALL[i])
    _check_tree(t, expected, list(expected))  # zones in first-seen order (dicts above are ordered)


REMOVE_CASES = [
    (
        "a single node with no labels",
        [0, 1, 2, 3, 4, 5, 6],
        [0],
        [z("region-1", ""), z("", "zone-2"), z("region-1", "zone-2"), z("region-1", "zone-3"), z("region-2", "zone-2")],
        ["node-1", "node-2", "node-3", "node-5", "node-6", "node-4"],
    ),
    (
        "a few nodes including one from a zone with several",
        [0, 1, 2, 3, 4, 5, 6],
        [1, 2, 3],
        ["", z("region-1", "zone-2"), z("region-1", "zone-3"), z("region-2", "zone-2")],
        ["node-0", "node-4", "node-5", "node-6"],
    ),
    ("all nodes", [0, 1, 2, 3, 4, 5, 6], [0, 1, 2, 3, 4, 5, 6], [], []),
]


@pytest.mark.parametrize("adds,removes,zones,listing", [c[1:] for c in REMOVE_CASES], ids=[c[0] for c in REMOVE_CASES])
def test_remove(adds, removes, zones, listing):
    t = new_tree()
    for i in adds:
        t.add_node(ALL[i])
    for i in removes:
        t.remove_node(ALL[i])
    assert list(t.zones) == zones
    assert list(t.list()) == listing
    assert t.num_nodes == len(listing)


UPDATE_CASES = [
    (
        "a node without label gets labels",
        [0, 1, 2, 3, 4, 5, 6],
        b.node("node-0", region="region-1", zone="zone-2"),
        [z("region-1", ""), z("", "zone-2"), z("region-1", "zone-2"), z("region-1", "zone-3"), z("region-2", "zone-2")],
        ["node-1", "node-2", "node-3", "node-5", "node-6", "node-4", "node-0"],
    ),
    (
        "the only node",
        [0],
        b.node("node-0", region="region-1", zone="zone-2"),
        [z("region-1", "zone-2")],
        ["node-0"],
    ),
    (
        "a node that is not in the tree",
        [0],
        b.node("node-new", region="region-1", zone="zone-2"),
        ["", z("region-1", "zone-2")],
        ["node-0", "node-new"],
    ),
    (
        "labels unchanged: nothing moves",
        [3, 4, 5],
        b.node("node-3", region="region-1", zone="zone-2", labels={"disk": "ssd"}),
        [z("region-1", "zone-2"), z("region-1", "zone-3")],
        ["node-3", "node-5", "node-4"],
    ),
]


@pytest.mark.parametrize("adds,new,zones,listing", [c[1:] for c in UPDATE_CASES], ids=[c[0] for c in UPDATE_CASES])
def test_update(adds, new, zones, listing):
    t = new_tree()
    for i in adds:
        t.add_node(ALL[i])
    old = next((n for n in ALL if n["metadata"]["name"] == new["metadata"]["name"]), b.node("nonexisting-node"))
    t.update_node(old, new)
    assert list(t.zones) == zones
    assert list(t.list()) == listing
    assert t.num_nodes == len(listing)


LIST_CASES = [
    ("empty", [], []),
    ("one node", [0], ["node-0"]),
    ("four nodes, four zones", [0, 1, 2, 3], ["node-0", "node-1", "node-2", "node-3"]),
    (
        "zones interleaved",
        [0, 1, 2, 3, 4, 5, 6, 7, 8],
        ["node-0", "node-1", "node-2", "node-3", "node-5", "node-6", "node-4", "node-7", "node-8"],
    ),
]


@pytest.mark.parametrize("adds,listing", [c[1:] for c in LIST_CASES], ids=[c[0] for c in LIST_CASES])
def test_list(adds, listing):
    t = new_tree()
    for i in adds:
        t.add_node(ALL[i])
    assert list(t.list()) == listing
    # list() does not move the round robin
    assert list(t.list()) == listing


NEXT_CASES = [
    ("empty tree", [], 2, ["", ""]),
    ("back to the first node after a round", [0], 2, ["node-0", "node-0"]),
    ("back to the first after all nodes", [0, 1, 2, 3], 5, ["node-0", "node-1", "node-2", "node-3", "node-0"]),
    (
        "every zone before the second node of a zone",
        [0, 1, 2, 3, 4, 5, 6, 7, 8],
        11,
        ["node-0", "node-1", "node-2", "node-3", "node-5", "node-6", "node-4", "node-7", "node-8", "node-0", "node-1"],
    ),
    (
        "one zone of three, one of one",
        [3, 6, 7, 8],
        9,
        ["node-3", "node-6", "node-7", "node-8", "node-3", "node-6", "node-7", "node-8", "node-3"],
    ),
]


@pytest.mark.parametrize("adds,runs,output", [c[1:] for c in NEXT_CASES], ids=[c[0] for c in NEXT_CASES])
def test_next(adds, runs, output):
    t = new_tree()
    for i in adds:
        t.add_node(ALL[i])
    assert [t.next() for _ in range(runs)] == output


# Operation scripts: ("add", i) / ("remove", i) / "next"; outputs are what next() returns.
MULTI_CASES = [
    (
        "add and remove all nodes between two next()",
        [("add", 2), ("add", 3), "next", ("add", 4), ("remove", 2), ("remove", 3), ("remove", 4), "next"],
        ["node-2", ""],
    ),
    (
        "add and remove some nodes between two next()",
        [("add", 2), ("add", 3), "next", ("add", 4), ("remove", 2), ("remove", 3), "next"],
        ["node-2", "node-4"],
    ),
    (
        "remove nodes already iterated on and add new nodes",
        [("add", 2), ("add", 3), "next", "next", ("add", 4), ("remove", 2), ("remove", 3), "next"],
        ["node-2", "node-3", "node-4"],
    ),
    (
        "add more nodes to an exhausted zone",
        # zones: region-1/zone-2 = [node-4], region-1/zone-3 = [node-5], region-2/zone-2 = [6, 7, 8]
        [("add", 4), ("add", 5), ("add", 6), ("add", 7), ("add", 8), "next", "next", "next", "next",
         ("add", 3), "next", "next", "next", "next"],
        # round 1: 4, 5, 6, then 7 (zones 1 and 2 exhausted); node-3 joins the exhausted zone 1
        # and is served next; then 8; then all zones are exhausted and the round restarts.
        ["node-4", "node-5", "node-6", "node-7", "node-3", "node-8", "node-4", "node-5"],
    ),
    (
        "add more nodes to an exhausted zone, two zones",
        [("add", 4), ("add", 6), ("add", 7), ("add", 8), "next", "next", "next", "next",
         ("add", 3), "next", "next", "next"],
        ["node-4", "node-6", "node-7", "node-8", "node-3", "node-4", "node-6"],
    ),
    (
        "remove a zone and add new ones: exhaustion resets correctly",
        [("add", 3), ("add", 4), "next", "next", ("remove", 3), ("add", 6), ("add", 7), "next", "next",
         ("remove", 4), "next", "next"],
        ["node-3", "node-4", "node-6", "node-7", "node-6", "node-7"],
    ),
]


@pytest.mark.parametrize("script,output", [c[1:] for c in MULTI_CASES], ids=[c[0] for c in MULTI_CASES])
def test_multi_operations(script, output):
    t = new_tree()
    model = ref.RefNodeTree()
    got, modeled = [], []
    for op in script:
        if op == "next":
            got.append(t.next())
            modeled.append(model.next())
        elif op[0] == "add":
            t.add_node(ALL[op[1]])
            model.add(ALL[op[1]])
        else:
            t.remove_node(ALL[op[1]])
            model.remove(ALL[op[1]])
    assert modeled == output, "the reference model disagrees with the table"
    assert got == output


# ------------------------------------------------------------ through the cache


def test_cache_keeps_the_tree_in_step_with_nodes():
    cache = Cache(ttl=0)
    for i in (0, 3, 4, 6):
        cache.add_node(ALL[i])
    assert cache.node_tree.num_nodes == 4
    assert list(cache.node_tree.list()) == ["node-0", "node-3", "node-6", "node-4"]
    moved = b.node("node-3", region="region-2", zone="zone-2", resource_version="2")
    cache.update_node(ALL[3], moved)
    assert list(cache.node_tree.zones) == ["", z("region-1", "zone-2"), z("region-2", "zone-2")]
    assert list(cache.node_tree.list()) == ["node-0", "node-4", "node-6", "node-3"]
    cache.remove_node(ALL[4])
    assert list(cache.node_tree.zones) == ["", z("region-2", "zone-2")]
    assert list(cache.node_tree.list()) == ["node-0", "node-6", "node-3"]
    assert cache.node_tree.num_nodes == 3


def test_pods_do_not_put_nodes_in_the_tree():
    cache = Cache(ttl=0)
    cache.add_pod(b.pod("p", "node-x"))
    assert cache.node_tree.num_nodes == 0
    assert list(cache.node_tree.list()) == []
    assert cache.node_tree.next() == ""


def test_removed_node_with_pods_leaves_the_tree():
    cache = Cache(ttl=0)
    cache.add_node(ALL[3])
    cache.add_node(ALL[5])
    cache.add_pod(b.pod("p", "node-3"))
    cache.remove_node(ALL[3])
    assert list(cache.node_tree.list()) == ["node-5"]
    assert list(cache.node_tree.zones) == [z("region-1", "zone-3")]
    assert [cache.node_tree.next() for _ in range(3)] == ["node-5"] * 3


def test_zone_re_added_goes_last():
    t = new_tree()
    for i in (0, 3, 5):
        t.add_node(ALL[i])
    t.remove_node(ALL[0])
    t.add_node(ALL[0])
    assert list(t.zones) == [z("region-1", "zone-2"), z("region-1", "zone-3"), ""]
    assert list(t.list()) == ["node-3", "node-5", "node-0"]
