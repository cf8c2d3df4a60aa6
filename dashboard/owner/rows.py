"""The read model's rows: one per cached pod and node, and per pod the owner knows left.

Rows are built for what changed since the last flush (the cache's events, and the
pending pods and outcomes the feed changed), at most ROWS_PER_FLUSH of each a flush.
"""

from dashboard.owner.journal import utc
from dashboard.owner.pod_ref import pod_ref
from dashboard.owner.row_details import node_details, pod_request_columns
from dashboard.owner.row_drift import RowsAtDump

ROWS_PER_FLUSH = 3000                    # read-model rows built per flush (100 ms)
_OUTCOMES = {"pod_expired": "Expired", "pod_forgotten": "Forgotten"}
_MOVED_ON = ("pod_assumed", "pod_added", "pod_confirmed")


def zone_display(key: str) -> str:
    """A NodeTree zone key ("region:\\x00:zone") as people write it ("region/zone")."""
    region, _, zone = (key or "").partition(":\x00:")
    return f"{region}/{zone}" if region else zone


class ReadModelRows:
    """`pending` (uid -> pod Mapping) is the feed's; `journal` numbers the rows."""

    def __init__(self, cache, journal, pending: dict, epoch: int, clock):
        self.cache = cache
        self.journal = journal
        self.pending = pending
        self.epoch = epoch            # stamped on every row this owner writes
        self.clock = clock
        self.outcome = {}             # uid -> (state, namespace, name, node) of an expired or
                                      # forgotten pod, until the pod moves on
        self.dirty_pods, self.dirty_nodes = set(), set()
        self._tree_version = -1
        self._tree_index = {}
        cache.subscribe(self._on_event)

    def _on_event(self, event):
        if event.kind.startswith("pod_"):
            self.dirty_pods.add(event.key)
            self.dirty_nodes.add(event.node)
            outcome = _OUTCOMES.get(event.kind)
            if outcome:
                self.outcome[event.key] = (outcome, event.namespace, event.name, event.node)
            elif event.kind in _MOVED_ON:
                self.outcome.pop(event.key, None)
        elif event.kind.startswith("node_"):
            self.dirty_nodes.add(event.key)

    def pod_left(self, uid: str):
        """The pod is gone from the cluster: its row goes, whatever its outcome was."""
        self.outcome.pop(uid, None)
        self.dirty_pods.add(uid)

    def at_dump(self, submitted: int):
        """What the rows held when the cache's dump was taken (row_drift.py)."""
        return RowsAtDump(self.journal.seq_base + self.cache.event_seq,
                          {uid: [o[0], o[3]] for uid, o in self.outcome.items()},
                          set(self.pending), set(self.dirty_pods), set(self.dirty_nodes),
                          submitted)

    def expected_pod(self, uid):
        """[state, node] of the row the owner means to write for the pod now, else None."""
        info = self.cache.pod_info(uid)
        if info is not None:
            assumed = self.cache.assumed_pod_status(pod_ref(uid)) is not None
            return ["Assumed" if assumed else "Added", info.node_name]
        outcome = self.outcome.get(uid)
        if outcome is not None:
            return [outcome[0], outcome[3]]
        return ["Pending", ""] if uid in self.pending else None

    def expected_node(self, name):
        """The generation of the node row the owner means to write now, else None."""
        info = self.cache.node_info(name)
        return None if info is None else info.generation

    def backlog(self) -> int:
        """Rows not yet built."""
        return len(self.dirty_pods) + len(self.dirty_nodes)

    def build(self, batch):
        """Rows for what changed, into `batch`: at most ROWS_PER_FLUSH of each, so that
        after a sync of 150,000 pods the backlog is written over a few seconds of flushes
        instead of stalling the owner for seconds."""
        tree = self.cache.node_tree
        if tree.version != self._tree_version:
            self._tree_version = tree.version
            self.dirty_nodes.update(self.cache.node_names())
            self._tree_index = {name: i for i, name in enumerate(tree.list())}
        now = utc(self.clock())
        for _ in range(min(len(self.dirty_nodes), ROWS_PER_FLUSH)):
            name = self.dirty_nodes.pop()
            if name:
                batch.nodes[name] = self._node_row(name, now)
        for _ in range(min(len(self.dirty_pods), ROWS_PER_FLUSH)):
            uid = self.dirty_pods.pop()
            batch.pods[uid] = self._pod_row(uid, now)

    def _node_row(self, name, now):
        info = self.cache.node_info(name)
        if info is None:
            return None
        zone = self.cache.node_tree.zone_of(name)
        return {"zone": zone_display(zone) if zone is not None else "",
                "tree_index": self._tree_index.get(name, -1), "has_node": info.has_node,
                "generation": info.generation, "pods": len(info.pod_keys),
                "requested": info.requested.as_dict(),
                "non_zero_requested": info.non_zero_requested.as_dict(),
                "allocatable": info.allocatable.as_dict(),
                "host_ports": info.used_ports.entries(), "images": len(info.image_states),
                **node_details(info), "changed_at": now, "owner_epoch": self.epoch}

    def _pod_row(self, uid, now):
        info = self.cache.pod_info(uid)
        seq = self.journal.seq_base + self.cache.event_seq
        if info is not None:
            status = self.cache.assumed_pod_status(pod_ref(uid))
            zone = self.cache.node_tree.zone_of(info.node_name)
            assumed_at = self.journal.assumptions.when(uid) if status is not None else None
            return {"namespace": info.namespace, "name": info.name, "node": info.node_name,
                    "zone": zone_display(zone) if zone is not None else "",
                    "state": "Assumed" if status is not None else "Added",
                    "assumed_at": utc(assumed_at) if assumed_at is not None else None,
                    "binding_finished": bool(status and status[0]),
                    "deadline": status[1] if status else None, "phase": info.phase,
                    "resource_version": info.resource_version, "labels": info.labels or {},
                    "milli_cpu": info.requested.milli_cpu, "memory": info.requested.memory,
                    "scalar_resources": dict(info.requested.scalar_resources),
                    "priority": info.priority, "seq": seq, "changed_at": now,
                    "owner_epoch": self.epoch}
        pod = self.pending.get(uid)
        outcome = self.outcome.get(uid)
        if outcome is None and pod is None:
            return None
        meta = (pod or {}).get("metadata") or {}
        state, namespace, name, node = outcome or ("Pending", meta.get("namespace", ""),
                                                   meta.get("name", ""), "")
        return {"namespace": namespace, "name": name, "node": node, "zone": "", "state": state,
                "assumed_at": None, "binding_finished": False,
                "deadline": None, "phase": ((pod or {}).get("status") or {}).get("phase", ""),
                "resource_version": meta.get("resourceVersion", ""),
                "labels": meta.get("labels") or {}, **pod_request_columns(pod),
                "priority": int(((pod or {}).get("spec") or {}).get("priority") or 0),
                "seq": seq, "changed_at": now, "owner_epoch": self.epoch}
