"""The scheduler's view of the cache at one generation.

Brought up to date by `Cache.update_snapshot`, which copies only the nodes
that changed since `generation`. A NodeInfo held here is updated in place, so
the lists that point at it stay valid without being rebuilt.
"""


class Snapshot:
    def __init__(self):
        self.generation = 0
        self.node_info_map = {}
        self.node_info_list = []
        self.have_pods_with_affinity_node_info_list = []
        self.have_pods_with_required_anti_affinity_node_info_list = []
        self.used_pvc_set = set()
        self._pvc_nodes = {}      # pvc key -> number of snapshot nodes using it
        self._tree_version = -1   # the NodeTree version node_info_list was built from

    def get(self, name):
        """The NodeInfo of a node, or None."""
        return self.node_info_map.get(name)

    def num_nodes(self) -> int:
        return len(self.node_info_list)

    def _count_pvcs(self, keys, delta):
        for key in keys:
            count = self._pvc_nodes.get(key, 0) + delta
            if count > 0:
                self._pvc_nodes[key] = count
                self.used_pvc_set.add(key)
            else:
                self._pvc_nodes.pop(key, None)
                self.used_pvc_set.discard(key)

    def _rebuild_lists(self, names):
        infos = [self.node_info_map[name] for name in names if name in self.node_info_map]
        self.node_info_list = infos
        self._rebuild_affinity_lists()
        self._pvc_nodes = {}
        self.used_pvc_set = set()
        for info in infos:
            self._count_pvcs(info._s.pvc_ref_counts, 1)

    def _rebuild_affinity_lists(self):
        self.have_pods_with_affinity_node_info_list = [
            i for i in self.node_info_list if i._s.affinity]
        self.have_pods_with_required_anti_affinity_node_info_list = [
            i for i in self.node_info_list if i._s.required_anti_affinity]
