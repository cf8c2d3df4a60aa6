"""Which nodes hold each container image, shared across the cache's nodes.

Nodes of a cluster pull the same images, and `status.images` (up to 50 entries of long
names) was three quarters of a node held: an entry a node reports is kept once for every
node reporting it alike (an `ImageEntry`), and a node keeps a tuple of references to its
entries, in the order it reported them (bench/cache_bench.py --node-memory, issue 26).
"""
import marshal
from itertools import chain
from typing import NamedTuple


class ImageStateSummary(NamedTuple):
    """An image as one node sees it: its size and how many nodes hold it."""
    size: int
    num_nodes: int


class ImageState:
    """An image name's size and how many nodes hold it: a count, not the nodes' names (a
    set of them cost 5 kB a node), since each node keeps which images it holds."""
    __slots__ = ("name", "size", "num_nodes", "_summary")

    def __init__(self, name, size):
        self.name = name
        self.size = size
        self.num_nodes = 0
        self._summary = None

    @property
    def summary(self) -> ImageStateSummary:
        """The count now, as an immutable value (made when first asked after a change)."""
        if self._summary is None:
            self._summary = ImageStateSummary(self.size, self.num_nodes)
        return self._summary

    def _count(self, delta):
        self.num_nodes += delta
        self._summary = None


class ImageEntry:
    """One item of `status.images` as reported (frozen: marshal bytes, given back as it
    was), with the states of its names; shared by every node reporting the same item."""
    __slots__ = ("frozen", "states", "users")

    def thaw(self) -> dict:
        return marshal.loads(self.frozen)


class NodeImages(NamedTuple):
    """A node's images: its entries as reported, and the states of their names, each
    once (a name a node reports twice counts it once)."""
    entries: tuple
    states: tuple


NO_IMAGES = NodeImages((), ())


def node_images(node) -> list:
    """Each item of a Node's `status.images` as (marshal bytes, names, size), for
    ImageStates.add_node; ValueError, TypeError or AttributeError for a malformed list."""
    items = ((node.get("status") or {}).get("images")) or ()
    return [(marshal.dumps(image), tuple(image.get("names") or ()),
             int(image.get("sizeBytes") or 0)) for image in items]


class ImageStates:
    """The cache-wide image tables: a state per image name, an entry per distinct item."""

    __slots__ = ("_states", "_entries")

    def __init__(self):
        self._states = {}
        self._entries = {}

    def add_node(self, images: list) -> NodeImages:
        """Record a node's images (node_images()); returns them for its NodeInfo."""
        found = self._entries.get
        entries = tuple(found(item) or self._new_entry(item, names, size)
                        for item, names, size in images)
        for entry in dict.fromkeys(entries):       # an item reported twice counts once
            entry.users += 1
        states = tuple(dict.fromkeys(chain.from_iterable(entry.states for entry in entries)))
        for state in states:                       # a state a name: counted once too
            state._count(1)
        return NodeImages(entries, states)

    def _new_entry(self, item, names, size) -> ImageEntry:
        entry = self._entries[item] = ImageEntry()
        entry.frozen, entry.users = item, 0
        states = []
        for name in dict.fromkeys(names):
            state = self._states.get(name)
            if state is None:
                state = self._states[name] = ImageState(name, size)
            states.append(state)
        entry.states = tuple(states)
        return entry

    def remove_node(self, images: NodeImages):
        for state in images.states:
            state._count(-1)
            if not state.num_nodes:
                self._states.pop(state.name, None)
        for entry in dict.fromkeys(images.entries):
            entry.users -= 1
            if not entry.users:
                self._entries.pop(entry.frozen, None)

    def __len__(self):
        return len(self._states)

    def num_nodes(self, name) -> int:
        state = self._states.get(name)
        return state.num_nodes if state else 0
