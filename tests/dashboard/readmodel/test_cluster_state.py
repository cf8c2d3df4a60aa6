"""A checkpoint's encoding: pods in several pieces, read back whole; a format it does not
know is refused rather than misread."""
import zlib

import orjson
import pytest

from dashboard.readmodel import cluster_state
from dashboard.readmodel.cluster_state import ClusterState, _tree


def test_pods_in_several_pieces_read_back_whole():
    pods = {f"uid-{i}": ["team", f"p-{i}", f"n{i % 3}", "Added", False,
                         [100, 1 << 20, 0, 0, {}], [100, 1 << 20, 0, 0, {}], i % 5]
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
