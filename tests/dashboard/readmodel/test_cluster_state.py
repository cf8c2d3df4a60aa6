"""A checkpoint's encoding: pods in several pieces, read back whole; a format it does not
know is refused rather than misread."""
import gc
import zlib

import orjson
import pytest

from dashboard.readmodel import cluster_state
from dashboard.readmodel.cluster_state import PRIORITY, REQUESTED, ClusterState, _tree


def test_pods_in_several_pieces_read_back_whole():
    pods = {f"uid-{i}": ("team", f"p-{i}", f"n{i % 3}", "Added", False,
                         (100, 1 << 20, 0, 0, ()), (100, 1 << 20, 0, 0, ()), i % 5)
            for i in range(2 * cluster_state.CHUNK + 1)}
    nodes = {f"n{i}": [["region-1", f"zone-{i}"], [4000, 1 << 33, 0, 110, {}], True, False,
                       [], 3, 7]
             for i in range(3)}
    tree = _tree([[["region-1", f"zone-{i}"], [f"n{i}"]] for i in range(3)], paired=True)
    blob = ClusterState(42, pods, nodes, tree).encode()
    assert zlib.decompress(blob).count(b"\n") == 3       # a header and three pieces of pods
    back = ClusterState.decoded(blob)
    assert (back.seq, back.pods, back.nodes, back.tree.list()) == (42, pods, nodes,
                                                                 ["n0", "n1", "n2"])


def test_an_unknown_format_is_refused():
    blob = zlib.compress(orjson.dumps({"format": 99, "seq": 1, "zones": [], "nodes": {}}))
    with pytest.raises(ValueError, match="format 99"):
        ClusterState.decoded(blob)


GPU = (("nvidia.com/gpu", 1),)


def _small_state() -> ClusterState:
    pods = {"a": ("team", "a", "n0", "Added", False, (500, 1 << 30, 0, 0, GPU),
                  (500, 1 << 30, 0, 0, GPU), 0),
            "b": ("team", "b", "n0", "Assumed", True, (100, 1 << 20, 0, 0, ()),
                  (100, 200 << 20, 0, 0, ()), 5)}
    nodes = {name: [["", "z"], [4000, 1 << 33, 0, 110, {"nvidia.com/gpu": 4}], True, False,
                    [], 0, 1] for name in ("n0", "n1")}
    return ClusterState(10, pods, nodes, _tree([[["", "z"], ["n0", "n1"]]], paired=True))


def replayed(requests: list) -> tuple:
    """A pod transition's `replay`, as the owner writes it and a reconstruction reads it."""
    return cluster_state.replay_value("pod_added", orjson.dumps([requests, requests, 7]))


# (kind, key, node, replay) applied in turn; after each, the kept sums equal a recount.
gpu_replay = replayed([1000, 1 << 30, 0, 0, {"nvidia.com/gpu": 1}])
plain_replay = replayed([200, 1 << 20, 0, 0, {}])
SCRIPT = [
    ("pod_assumed", "c", "n1", gpu_replay),          # a new pod, with a GPU
    ("pod_binding_finished", "c", "n1", None),
    ("pod_binding_finished", "c", "n1", None),        # told twice: counted once
    ("pod_confirmed", "c", "n1", gpu_replay),        # Added: no longer binding
    ("pod_updated", "c", "n0", gpu_replay),          # moved to another node
    ("pod_removed", "a", "n0", None),
    ("pod_removed", "c", "n0", None),                # n0's GPUs all gone: the key too
    ("pod_expired", "b", "n0", None),                # n0 without pods: no sums at all
    ("pod_forgotten", "nobody", "n1", None),
    ("pod_added", "d", "n1", plain_replay),
]


def test_the_sums_kept_while_replaying_equal_a_recount():
    state = _small_state()
    assert state.sums == cluster_state.sums_of(state.pods)
    for seq, (kind, key, node, replay) in enumerate(SCRIPT, start=11):
        state.replay(seq, kind, key, "team", key, node, seq, replay)
        assert state.sums == cluster_state.sums_of(state.pods), f"after {kind} {key}"
    assert set(state.sums) == {"n1"}
    assert state.sums["n1"][cluster_state.SUM_BY_STATE] == {"Added": 1}
    state.replay(30, "owner_leading", "", "", "", "", 0, None)
    assert (state.pods, state.sums) == ({}, {})


def test_a_copy_replays_without_changing_the_state_it_came_from():
    start = _small_state()
    before = orjson.dumps(start.sums)
    copy = start.copy()
    for seq, (kind, key, node, replay) in enumerate(SCRIPT, start=11):
        copy.replay(seq, kind, key, "team", key, node, seq, replay)
    assert orjson.dumps(start.sums) == before
    assert start.sums == cluster_state.sums_of(start.pods)


def test_a_checkpoint_keeps_the_sums_and_one_entry_for_pods_asking_alike():
    state = _small_state()
    for i in range(50):
        state.replay(100 + i, "pod_added", f"p{i}", "team", f"p{i}", "n1", 100 + i,
                     plain_replay)
    blob = state.encode()
    header = orjson.loads(zlib.decompress(blob).split(b"\n")[0])
    assert len(header["entries"]) == 4     # the 50 alike share one, as requested and non-zero
    back = ClusterState.decoded(blob)
    assert (back.pods, back.sums) == (state.pods, state.sums)


def test_a_checkpoint_of_the_first_format_reads_with_its_sums_counted():
    state = _small_state()
    header = {"format": 1, "seq": 10, "zones": [[["", "z"], ["n0", "n1"]]],
              "nodes": state.nodes}
    as_written = {uid: [*pod[:REQUESTED], *([*entry[:4], dict(entry[4])]
                                            for entry in pod[REQUESTED:PRIORITY]), pod[PRIORITY]]
                  for uid, pod in state.pods.items()}   # entries inline, extended ones a dict
    blob = zlib.compress(orjson.dumps(header) + b"\n" + orjson.dumps(as_written))
    back = ClusterState.decoded(blob)     # format 1's pods, lists, come back as tuples
    assert (back.pods, back.sums) == (state.pods, state.sums)
    assert back.sums["n0"][cluster_state.SUM_FINISHED] == 1


def _untrackable(value) -> bool:
    """The collector leaves it alone, or will once it has passed over it: a tuple of such."""
    return not gc.is_tracked(value) or (type(value) is tuple and all(map(_untrackable, value)))


def test_a_state_leaves_the_collector_nothing_to_follow():
    """Pods and their entries are tuples of values the collector does not follow, so its
    passes untrack them and no later pass walks 150,000 of them (see POD's shape). A list
    or a dict anywhere in a pod would keep it tracked for good."""
    state = _small_state()
    for i in range(20):
        state.replay(100 + i, "pod_added", f"p{i}", "team", f"p{i}", "n1", 100 + i,
                     gpu_replay)
    state.replay(200, "pod_binding_finished", "p3", "team", "p3", "n1", 200, None)
    for found in (ClusterState.decoded(state.encode()), state):
        assert len(found.pods) == 22
        assert all(map(_untrackable, found.pods.values()))
