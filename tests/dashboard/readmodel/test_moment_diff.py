"""The diff of two moments: each list counts everything and holds the first `limit` by
namespace and name; a node's use before and after, for the nodes whose use changed."""
from datetime import datetime, timezone

from dashboard.readmodel.cluster_state import ClusterState, _tree
from dashboard.readmodel.moment import Moment, MomentRef
from dashboard.readmodel.moment_diff import diff

NOW = datetime(2026, 11, 27, tzinfo=timezone.utc)
ENTRY = (100, 1 << 20, 0, 0, ())


def pod(namespace, name, node, state="Added"):
    return (namespace, name, node, state, False, ENTRY, ENTRY, 0)


def moment_of(seq, pods) -> Moment:
    nodes = {n: [["", "z"], [4000, 1 << 33, 0, 110, {}], True, False, [], 0, 1]
             for n in ("n0", "n1")}
    state = ClusterState(seq, pods, nodes, _tree([[["", "z"], ["n0", "n1"]]], paired=True))
    return Moment(MomentRef(seq, NOW), state)


def test_each_list_counts_all_and_holds_the_first_by_namespace_and_name():
    shared = pod("a", "stays", "n0")
    before = moment_of(1, {"s": shared, "m": pod("a", "mover", "n0"),
                           "c": pod("a", "changer", "n1", "Assumed"),
                           **{f"l{i}": pod("b", f"left-{i}", "n0") for i in range(5)}})
    after = moment_of(2, {"s": shared, "m": pod("a", "mover", "n1"),
                          "c": pod("a", "changer", "n1"),
                          **{f"a{i}": pod(ns, f"new-{i}", "n1")
                             for i, ns in enumerate(["z", "c", "c", "a"])}})
    found = diff(before, after, limit=2)
    assert found["appeared"]["count"] == 4
    assert [(p["namespace"], p["name"]) for p in found["appeared"]["items"]] == [
        ("a", "new-3"), ("c", "new-1")]
    assert found["left"]["count"] == 5
    assert [p["name"] for p in found["left"]["items"]] == ["left-0", "left-1"]
    assert found["moved"] == {"count": 1, "items": [
        {"uid": "m", "namespace": "a", "name": "mover", "node": "n1", "state": "Added",
         "from_node": "n0"}]}
    assert found["changed_state"]["items"][0]["from_state"] == "Assumed"
    uses = {n["name"]: (n["before"]["pods"], n["after"]["pods"])
            for n in found["nodes"]["items"]}
    assert uses == {"n0": (7, 1), "n1": (1, 6)}
