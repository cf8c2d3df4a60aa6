"""Which nodes hold each container image, shared across the cache's nodes."""
from typing import NamedTuple


class ImageStateSummary(NamedTuple):
    """An image as one node sees it: its size and how many nodes hold it."""
    size: int
    num_nodes: int


class _ImageState:
    __slots__ = ("size", "nodes", "summary")

    def __init__(self, size):
        self.size = size
        self.nodes = set()
        self.summary = ImageStateSummary(size, 0)

    def _refresh(self):
        self.summary = ImageStateSummary(self.size, len(self.nodes))


def node_images(node) -> list:
    """(names, size) of each image a Node reports in `status.images`."""
    images = ((node.get("status") or {}).get("images")) or ()
    return [(tuple(image.get("names") or ()), int(image.get("sizeBytes") or 0)) for image in images]


class ImageStates:
    """The cache-wide image table; a node's NodeInfo refers to its entries."""

    __slots__ = ("_states",)

    def __init__(self):
        self._states = {}

    def add_node(self, node_name, images) -> dict:
        """Record the node's images; returns name -> live state for its NodeInfo."""
        held = {}
        for names, size in images:
            for name in names:
                state = self._states.get(name)
                if state is None:
                    state = self._states[name] = _ImageState(size)
                state.nodes.add(node_name)
                state._refresh()
                held[name] = state
        return held

    def remove_node(self, node_name, held: dict):
        for name, state in held.items():
            state.nodes.discard(node_name)
            if state.nodes:
                state._refresh()
            else:
                self._states.pop(name, None)

    def __len__(self):
        return len(self._states)

    def num_nodes(self, name) -> int:
        state = self._states.get(name)
        return len(state.nodes) if state else 0
