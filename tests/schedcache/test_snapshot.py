"""The incremental Snapshot (upstream's), the older interfaces' map views and dump()."""

import pytest

from schedcache import Cache, Snapshot

import tests.schedcache.builders as b
import tests.schedcache.reference as ref

NODES = [b.node("test-node%d" % i, cpu="1000m", memory="100m", region="r", zone="z%d" % (i % 3)) for i in range(10)]
UPDATED = [b.node("test-node%d" % i, cpu="2000m", memory="500m", region="r", zone="z%d" % (i % 3), resource_version="2") for i in range(10)]
PODS = [b.pod("test-pod%d" % i, "test-node%d" % (i % 10), namespace="test-ns", cpu="10m") for i in range(20)]
UPDATED_PODS = [b.new_version(p, labels={"updated": "yes"}) for p in PODS]
AFFINITY_PODS = [
    b.pod("p-affinity-%d" % i, "test-node%d" % i, namespace="test-ns", affinity=b.pod_affinity_required("foo", "bar"))
    for i in range(2)
]
ANTI_PODS = [
    b.pod("p-anti-%d" % i, "test-node%d" % i, namespace="test-ns", affinity=b.pod_anti_affinity_required("foo", "bar"))
    for i in range(2)
]
PVC_PODS = [b.pod("p-pvc-%d" % i, "test-node%d" % (i % 2), namespace="test-ns", pvcs=["test-pvc%d" % (i % 4)]) for i in range(8)]


def node_name(ni):
    return ni.node["metadata"]["name"]


class Script:
    """Runs an upstream-style operation list; "snap" brings the held snapshot up to date
    and checks it against a snapshot built from scratch."""

    def __init__(self):
        self.cache = Cache(ttl=0)
        self.snap = Snapshot()

    def do(self, op):
        kind, *args = op.split(":")
        i = int(args[0]) if args else None
        c = self.cache
        if kind == "addNode":
            c.add_node(NODES[i])
        elif kind == "removeNode":
            c.remove_node(NODES[i])
        elif kind == "updateNode":
            c.update_node(NODES[i], UPDATED[i])
        elif kind == "addPod":
            c.add_pod(PODS[i])
        elif kind == "updatePod":
            c.update_pod(PODS[i], UPDATED_PODS[i])
        elif kind == "removePod":
            c.remove_pod(PODS[i])
        elif kind == "addAff":
            c.add_pod(AFFINITY_PODS[i])
        elif kind == "removeAff":
            c.remove_pod(AFFINITY_PODS[i])
        elif kind == "addAnti":
            c.add_pod(ANTI_PODS[i])
        elif kind == "removeAnti":
            c.remove_pod(ANTI_PODS[i])
        elif kind == "addPVC":
            c.add_pod(PVC_PODS[i])
        elif kind == "removePVC":
            c.remove_pod(PVC_PODS[i])
        elif kind == "snap":
            c.update_snapshot(self.snap)
            ref.assert_snapshot_consistent(c, self.snap)
        else:  # pragma: no cover
            raise AssertionError(op)


# id, operations, expected nodes, #nodes with affinity pods, #nodes with required anti-affinity, used PVCs
CASES = [
    ("empty cache", [], [], 0, 0, set()),
    ("single node", ["addNode:1"], [1], 0, 0, set()),
    ("add node, remove it, add it again", ["addNode:1", "snap", "removeNode:1", "addNode:1"], [1], 0, 0, set()),
    ("add and remove in the same cycle", ["addNode:1", "snap", "addNode:2", "removeNode:1"], [2], 0, 0, set()),
    (
        "add a few nodes, snapshot in the middle",
        ["addNode:0", "snap", "addNode:1", "snap", "addNode:2", "snap", "addNode:3"],
        [0, 1, 2, 3],
        0,
        0,
        set(),
    ),
    ("add a few nodes, snapshot at the end", ["addNode:0", "addNode:2", "addNode:5", "addNode:6"], [0, 2, 5, 6], 0, 0, set()),
    ("update some nodes", ["addNode:0", "addNode:1", "addNode:5", "snap", "updateNode:1"], [0, 1, 5], 0, 0, set()),
    (
        "remove all nodes",
        ["addNode:0", "addNode:2", "addNode:5", "addNode:6", "snap", "removeNode:0", "removeNode:2", "removeNode:5", "removeNode:6"],
        [],
        0,
        0,
        set(),
    ),
    (
        "remove some nodes",
        ["addNode:0", "addNode:2", "addNode:5", "addNode:6", "snap", "removeNode:0", "removeNode:6"],
        [2, 5],
        0,
        0,
        set(),
    ),
    (
        "remove all, add more",
        ["addNode:2", "addNode:5", "addNode:6", "snap", "removeNode:2", "removeNode:5", "removeNode:6", "snap", "addNode:7", "addNode:9"],
        [7, 9],
        0,
        0,
        set(),
    ),
    ("update nodes in particular order", ["addNode:8", "updateNode:2", "updateNode:8", "snap", "addNode:1"], [1, 2, 8], 0, 0, set()),
    ("nodes and pods", ["addNode:0", "addNode:2", "addNode:8", "snap", "addPod:8", "addPod:2"], [0, 2, 8], 0, 0, set()),
    ("updating a pod", ["addNode:0", "addPod:0", "addNode:2", "addNode:4", "updatePod:0"], [0, 2, 4], 0, 0, set()),
    ("pod before its node", ["addNode:0", "addPod:1", "updatePod:1", "addNode:1"], [0, 1], 0, 0, set()),
    ("pod of an unknown node is not in the snapshot", ["addNode:0", "addPod:1", "snap", "updatePod:1"], [0], 0, 0, set()),
    (
        "remove node before its pods",
        ["addNode:0", "addNode:1", "addPod:1", "addPod:11", "snap", "removeNode:1", "snap", "updatePod:1", "updatePod:11", "removePod:1", "removePod:11"],
        [0],
        0,
        0,
        set(),
    ),
    ("pods with affinity", ["addNode:0", "addAff:0", "snap", "addNode:1"], [0, 1], 1, 0, set()),
    ("pods with PVC", ["addNode:0", "addPVC:0", "snap", "addNode:1"], [0, 1], 0, 0, {"test-ns/test-pvc0"}),
    (
        "several nodes with affinity pods",
        ["addNode:0", "addAff:0", "snap", "addNode:1", "addAff:1", "snap"],
        [0, 1],
        2,
        0,
        set(),
    ),
    (
        "required anti-affinity",
        ["addNode:0", "addNode:1", "addAnti:1", "snap", "addAnti:0", "removeAnti:1"],
        [0, 1],
        1,
        1,
        set(),
    ),
    (
        "several nodes with PVC pods",
        ["addNode:0", "addPVC:0", "snap", "addNode:1", "addPVC:1", "snap"],
        [0, 1],
        0,
        0,
        {"test-ns/test-pvc0", "test-ns/test-pvc1"},
    ),
    ("add then remove affinity pod", ["addNode:0", "addNode:1", "addAff:0", "snap", "removeAff:0", "snap"], [0, 1], 0, 0, set()),
    ("add then remove PVC pod", ["addNode:0", "addPVC:0", "snap", "removePVC:0", "addPVC:2", "snap"], [0], 0, 0, {"test-ns/test-pvc2"}),
    ("remove PVC pod and add it again", ["addNode:0", "addPVC:0", "snap", "removePVC:0", "addPVC:0", "snap"], [0], 0, 0, {"test-ns/test-pvc0"}),
    (
        "PVC shared by two pods, one goes",
        ["addNode:0", "addPVC:0", "addPVC:4", "snap", "removePVC:0"],
        [0],
        0,
        0,
        {"test-ns/test-pvc0"},
    ),
    ("PVC pods on a node that is removed", ["addNode:0", "addNode:1", "addPVC:1", "snap", "removeNode:1"], [0], 0, 0, set()),
    ("affinity pods on a node that is removed", ["addNode:0", "addAff:0", "snap", "removeNode:0", "addNode:1"], [1], 0, 0, set()),
]


@pytest.mark.parametrize("ops,expected,n_aff,n_anti,pvcs", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_update_snapshot(ops, expected, n_aff, n_anti, pvcs):
    s = Script()
    for op in ops:
        s.do(op)
    s.do("snap")
    assert sorted(s.snap.node_info_map) == sorted("test-node%d" % i for i in expected)
    assert len(s.snap.node_info_list) == len(expected)
    assert len(s.snap.have_pods_with_affinity_node_info_list) == n_aff
    assert len(s.snap.have_pods_with_required_anti_affinity_node_info_list) == n_anti
    assert set(s.snap.used_pvc_set) == pvcs


def test_empty_snapshot():
    snap = Snapshot()
    assert dict(snap.node_info_map) == {}
    assert list(snap.node_info_list) == []
    assert list(snap.have_pods_with_affinity_node_info_list) == []
    assert list(snap.have_pods_with_required_anti_affinity_node_info_list) == []
    assert set(snap.used_pvc_set) == set()


def _objects(snap):
    return {name: ni for name, ni in snap.node_info_map.items()}


def test_unchanged_nodeinfos_stay_the_same_objects():
    cache = Cache(ttl=0)
    for i in range(4):
        cache.add_node(NODES[i])
    snap = Snapshot()
    cache.update_snapshot(snap)
    first = _objects(snap)
    gen_before = snap.generation

    cache.add_pod(PODS[1])
    cache.update_snapshot(snap)
    second = _objects(snap)
    assert snap.generation > gen_before
    for name in ("test-node0", "test-node2", "test-node3"):
        assert second[name] is first[name], name
    assert [ref.uid(pi.pod) for pi in second["test-node1"].pods] == [ref.uid(PODS[1])]

    # nothing changed: nothing is copied, the generation stays
    gen = snap.generation
    cache.update_snapshot(snap)
    third = _objects(snap)
    assert snap.generation == gen
    for name in third:
        assert third[name] is second[name], name

    # a removed node is dropped, the others stay the same objects
    cache.remove_node(NODES[3])
    cache.update_snapshot(snap)
    fourth = _objects(snap)
    assert set(fourth) == {"test-node0", "test-node1", "test-node2"}
    for name in fourth:
        assert fourth[name] is third[name], name
    assert ref.snapshot_names(snap) == list(cache.node_tree.list())
    ref.assert_snapshot_consistent(cache, snap)


def test_only_changed_nodes_are_copied_pod_on_unknown_node():
    """A change to a NodeInfo without a node (pod before its node) copies nothing."""
    cache = Cache(ttl=0)
    cache.add_node(NODES[0])
    snap = Snapshot()
    cache.update_snapshot(snap)
    before = _objects(snap)
    cache.add_pod(PODS[5])  # test-node5 is not a node yet
    cache.update_snapshot(snap)
    assert _objects(snap) == before
    assert _objects(snap)["test-node0"] is before["test-node0"]
    ref.assert_snapshot_consistent(cache, snap)


def test_snapshot_is_independent_of_later_cache_changes():
    cache = Cache(ttl=0)
    cache.add_node(NODES[0])
    cache.add_node(NODES[1])
    cache.add_pod(AFFINITY_PODS[0])
    cache.add_pod(PVC_PODS[1])
    snap = Snapshot()
    cache.update_snapshot(snap)
    held = ref.snapshot_view(snap, images="full")
    cache.add_pod(PODS[0])
    cache.remove_pod(AFFINITY_PODS[0])
    cache.remove_pod(PVC_PODS[1])
    cache.update_node(NODES[1], UPDATED[1])
    cache.add_node(NODES[2])
    cache.remove_node(NODES[0])
    assert ref.snapshot_view(snap, images="full") == held


def test_node_info_list_follows_node_tree_order():
    cache = Cache(ttl=0)
    order = [5, 0, 3, 7, 1, 4]
    for i in order:
        cache.add_node(NODES[i])
    snap = Snapshot()
    cache.update_snapshot(snap)
    assert ref.snapshot_names(snap) == list(cache.node_tree.list())
    # zones z0 (0,3), z1 (7,1,4), z2 (5): first-seen order z2, z0, z1
    assert ref.snapshot_names(snap) == ["test-node5", "test-node0", "test-node7", "test-node3", "test-node1", "test-node4"]


def test_node_info_list_follows_a_zone_change():
    cache = Cache(ttl=0)
    for i in (0, 1, 2):
        cache.add_node(NODES[i])
    snap = Snapshot()
    cache.update_snapshot(snap)
    moved = b.node("test-node0", cpu="1000m", memory="100m", region="r", zone="z9", resource_version="3")
    cache.update_node(NODES[0], moved)
    cache.update_snapshot(snap)
    assert ref.snapshot_names(snap) == list(cache.node_tree.list())
    ref.assert_snapshot_consistent(cache, snap)


def test_snapshot_holds_assumed_pods_and_drops_expired_ones():
    cache = Cache(ttl=10)
    cache.add_node(NODES[0])
    p = PODS[0]
    cache.assume_pod(p)
    cache.finish_binding(p, now=100.0)
    snap = Snapshot()
    cache.update_snapshot(snap)
    assert [ref.uid(pi.pod) for pi in snap.node_info_map["test-node0"].pods] == [ref.uid(p)]
    cache.cleanup_assumed_pods(now=111.0)
    cache.update_snapshot(snap)
    assert list(snap.node_info_map["test-node0"].pods) == []
    ref.assert_snapshot_consistent(cache, snap)


def test_snapshot_generation_only_grows_with_changes():
    cache = Cache(ttl=0)
    snap = Snapshot()
    cache.update_snapshot(snap)
    g0 = snap.generation
    cache.add_node(NODES[0])
    cache.update_snapshot(snap)
    g1 = snap.generation
    assert g1 > g0
    assert g1 == cache.dump().nodes["test-node0"].generation


# ------------------------------------------------------------ the map views


def test_get_node_name_to_info_map_has_every_nodeinfo():
    cache = Cache(ttl=10)
    cache.add_node(NODES[0])
    cache.add_node(NODES[1])
    cache.assume_pod(PODS[0])
    cache.add_pod(PODS[2])  # a node the cache does not know
    m = cache.get_node_name_to_info_map()
    assert set(m) == {"test-node0", "test-node1", "test-node2"}
    assert [ref.uid(pi.pod) for pi in m["test-node0"].pods] == [ref.uid(PODS[0])]
    assert m["test-node2"].node is None
    d = cache.dump()
    for name in m:
        assert ref.info_view(m[name]) == ref.info_view(d.nodes[name])


def test_get_node_name_to_info_map_returns_copies():
    cache = Cache(ttl=0)
    cache.add_node(NODES[0])
    cache.add_pod(PODS[0])
    m1 = cache.get_node_name_to_info_map()
    held = ref.info_view(m1["test-node0"])
    m2 = cache.get_node_name_to_info_map()
    assert m2["test-node0"] is not m1["test-node0"]
    cache.add_pod(PODS[10])
    assert ref.info_view(m1["test-node0"]) == held
    m1["test-node0"].requested.milli_cpu = 999_999
    m1.clear()
    assert cache.get_node_name_to_info_map()["test-node0"].requested.milli_cpu == 20


def test_update_node_name_to_info_map_touches_only_changed_entries():
    cache = Cache(ttl=0)
    for i in range(3):
        cache.add_node(NODES[i])
    info_map = {}
    cache.update_node_name_to_info_map(info_map)
    assert set(info_map) == {"test-node0", "test-node1", "test-node2"}
    first = dict(info_map)

    cache.add_pod(PODS[1])
    cache.add_pod(PODS[3])  # a NodeInfo without a node appears
    cache.remove_node(NODES[2])  # no pods: gone
    info_map["stale-node"] = first["test-node0"]  # an entry the cache never had
    cache.update_node_name_to_info_map(info_map)

    assert set(info_map) == {"test-node0", "test-node1", "test-node3"}
    assert info_map["test-node0"] is first["test-node0"]
    assert info_map["test-node1"] is not first["test-node1"]
    assert [ref.uid(pi.pod) for pi in info_map["test-node1"].pods] == [ref.uid(PODS[1])]
    assert info_map["test-node3"].node is None
    d = cache.dump()
    for name, ni in info_map.items():
        assert ref.info_view(ni) == ref.info_view(d.nodes[name])


def test_update_node_name_to_info_map_leaves_same_generation_entries_alone():
    cache = Cache(ttl=0)
    cache.add_node(NODES[0])
    cache.add_node(NODES[1])
    info_map = {}
    cache.update_node_name_to_info_map(info_map)
    mine = info_map["test-node0"]
    changed = info_map["test-node1"]
    cache.add_pod(PODS[1])
    cache.update_node_name_to_info_map(info_map)
    assert info_map["test-node0"] is mine
    assert info_map["test-node1"] is not changed
    # an entry the caller replaced by its own object of the same generation stays the caller's
    own = cache.get_node_name_to_info_map()["test-node0"]
    info_map["test-node0"] = own
    cache.update_node_name_to_info_map(info_map)
    assert info_map["test-node0"] is own


def test_update_node_name_to_info_map_is_independent_of_the_cache():
    cache = Cache(ttl=0)
    cache.add_node(NODES[0])
    info_map = {}
    cache.update_node_name_to_info_map(info_map)
    held = ref.info_view(info_map["test-node0"])
    cache.add_pod(PODS[0])
    assert ref.info_view(info_map["test-node0"]) == held


# ---------------------------------------------------------------------- dump


def test_dump():
    cache = Cache(ttl=10)
    cache.add_node(NODES[0])
    a, c = PODS[0], PODS[10]
    cache.assume_pod(a)
    cache.assume_pod(c)
    cache.finish_binding(a, now=100.0)
    cache.add_pod(a)
    d = cache.dump()
    assert set(d.assumed_pods) == {ref.uid(c)}
    assert set(d.nodes) == {"test-node0"}
    want = ref.expected_info(NODES[0], [a, c], [NODES[0]])
    assert ref.without(ref.info_view(d.nodes["test-node0"]), "generation") == want
    assert cache.node_count() == 1
    assert cache.pod_count() == 2


def test_dump_is_a_copy():
    cache = Cache(ttl=10)
    cache.add_node(NODES[0])
    cache.assume_pod(PODS[0])
    d = cache.dump()
    held = (sorted(d.assumed_pods), ref.info_view(d.nodes["test-node0"]))
    cache.add_pod(PODS[0])
    cache.add_pod(PODS[10])
    assert (sorted(d.assumed_pods), ref.info_view(d.nodes["test-node0"])) == held
    cache.assume_pod(PODS[11])
    d = cache.dump()
    try:
        d.assumed_pods.clear()
    except AttributeError:  # an immutable set is fine too
        pass
    d.nodes.clear()
    d2 = cache.dump()
    assert set(d2.nodes) == {"test-node0", "test-node1"}
    assert set(d2.assumed_pods) == {ref.uid(PODS[11])}
