"""Which nodes hold each container image, shared across the cache's nodes."""
from typing import NamedTuple


class ImageStateSummary(NamedTuple):
    """An image as one node sees it: its size and how many nodes hold it."""
    size: int
    num_nodes: int


class _ImageState:
    """An image's size and how many nodes hold it: a count, not the nodes' names (a set of
    them cost 5 kB a node), since each node's NodeInfo keeps which images it holds."""
    __slots__ = ("size", "num_nodes", "summary")

    def __init__(self, size):
        self.size = size
        self.num_nodes = 0
        self.summary = ImageStateSummary(size, 0)

    def _count(self, delta):
        self.num_nodes += delta
        self.summary = ImageStateSummary(self.size, self.num_nodes)


def node_images(node) -> list:
    """(names, size) of each image a Node reports in `status.images`."""
    images = ((node.get("status") or {}).get("images")) or ()
    return [(tuple(image.get("names") or ()), int(image.get("sizeBytes") or 0)) for image in images]


class ImageStates:
    """The cache-wide image table; a node's NodeInfo refers to its entries."""

    __slots__ = ("_states",)

    def __init__(self):
        self._states = {}

    def add_node(self, images) -> dict:
        """Record the node's images; returns name -> live state for its NodeInfo."""
        held = {}
        for names, size in images:
            for name in names:
                if name in held:        # a name the node reports twice counts it once
                    continue
                state = self._states.get(name)
                if state is None:
                    state = self._states[name] = _ImageState(size)
                state._count(1)
                held[name] = state
        return held

    def remove_node(self, held: dict):
        for name, state in held.items():
            state._count(-1)
            if not state.num_nodes:
                self._states.pop(name, None)

    def __len__(self):
        return len(self._states)

    def num_nodes(self, name) -> int:
        state = self._states.get(name)
        return state.num_nodes if state else 0
