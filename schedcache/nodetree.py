"""Nodes grouped by zone, so that placements can be spread across zones.

`list()` interleaves the zones (first node of each zone, then the second of
each, ...); `next()` is upstream's stateful round robin over the same shape.
"""

ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
LEGACY_ZONE_LABEL = "failure-domain.beta.kubernetes.io/zone"
LEGACY_REGION_LABEL = "failure-domain.beta.kubernetes.io/region"


def zone_key(node) -> str:
    """region + ":\\x00:" + zone, as upstream builds it; "" when a node has neither label."""
    labels = ((node.get("metadata") or {}).get("labels")) or {}
    zone = labels.get(LEGACY_ZONE_LABEL, labels.get(ZONE_LABEL, ""))
    region = labels.get(LEGACY_REGION_LABEL, labels.get(REGION_LABEL, ""))
    if not zone and not region:
        return ""
    return f"{region}:\x00:{zone}"


def node_name(node) -> str:
    return (node.get("metadata") or {}).get("name") or ""


class _NodeArray:
    __slots__ = ("nodes", "last_index")

    def __init__(self):
        self.nodes = []
        self.last_index = 0

    def next(self):
        """(name, exhausted): the next node of this zone in the current round."""
        if self.last_index >= len(self.nodes):
            return "", True
        name = self.nodes[self.last_index]
        self.last_index += 1
        return name, False


class NodeTree:
    """Zone -> node names. Not locked itself: the cache's lock covers it."""

    def __init__(self):
        self._tree = {}       # zone key -> _NodeArray
        self.zones = []       # zone keys in first-seen order
        self._zone_index = 0
        self.num_nodes = 0
        self._zone_of = {}    # node name -> zone key
        self.version = 0      # grows whenever list() would change

    def add_node(self, node):
        name = node_name(node)
        if name in self._zone_of:
            return
        self._insert(name, zone_key(node))

    def _insert(self, name, zone):
        array = self._tree.get(zone)
        if array is None:
            array = self._tree[zone] = _NodeArray()
            self.zones.append(zone)
        array.nodes.append(name)
        self._zone_of[name] = zone
        self.num_nodes += 1
        self.version += 1

    def remove_node(self, node) -> bool:
        """Remove a node by name; False when it was not in the tree."""
        name = node_name(node)
        zone = self._zone_of.pop(name, None)
        if zone is None:
            return False
        array = self._tree[zone]
        array.nodes.remove(name)
        if not array.nodes:
            del self._tree[zone]
            self.zones.remove(zone)
        self.num_nodes -= 1
        self.version += 1
        return True

    def update_node(self, old, new):
        """Move a node whose zone labels changed; add it when it was not in the tree."""
        name = node_name(new)
        zone = zone_key(new)
        current = self._zone_of.get(name)
        if current == zone:
            return
        if current is not None:
            self.remove_node(new)
        self._insert(name, zone)

    def zone_of(self, name) -> str:
        return self._zone_of.get(name)

    def nodes_in(self, zone) -> list:
        array = self._tree.get(zone)
        return list(array.nodes) if array else []

    def list(self) -> list:
        """Every node name, zones interleaved."""
        arrays = [self._tree[zone].nodes for zone in self.zones]
        names = []
        depth = max((len(a) for a in arrays), default=0)
        for index in range(depth):
            for array in arrays:
                if index < len(array):
                    names.append(array[index])
        return names

    def next(self) -> str:
        """The next node of the round robin over zones; "" when the tree is empty."""
        if not self.zones:
            return ""
        exhausted_zones = 0
        while True:
            if self._zone_index >= len(self.zones):
                self._zone_index = 0
            zone = self.zones[self._zone_index]
            self._zone_index += 1
            # An exhausted zone is still asked: nodes added to it since are picked up.
            name, exhausted = self._tree[zone].next()
            if not exhausted:
                return name
            exhausted_zones += 1
            if exhausted_zones >= len(self.zones):
                self._reset_exhausted()

    def _reset_exhausted(self):
        for array in self._tree.values():
            array.last_index = 0
        self._zone_index = 0

    def position(self) -> dict:
        """The round robin's state, for views: zone index and each zone's next index."""
        return {"zone_index": self._zone_index,
                "zones": {zone: self._tree[zone].last_index for zone in self.zones}}
