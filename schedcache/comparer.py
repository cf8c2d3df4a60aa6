"""Drift between the cache and the cluster it mirrors.

Like upstream's cache debugger comparer, but it says more: pods and nodes the
cache missed or holds in excess, pods it has on another node or at an older
resourceVersion, nodes deleted with pods left (ghosts), and per-node
aggregates that differ from a recomputation from the node's own pods.
"""
from dataclasses import asdict, dataclass, field

from .resource import node_allocatable

_TERMINATED = ("Succeeded", "Failed")


@dataclass
class CompareReport:
    missed_pods: list = field(default_factory=list)        # bound in the cluster, not cached
    redundant_pods: list = field(default_factory=list)     # cached, gone from the cluster
    wrong_node_pods: list = field(default_factory=list)    # (uid, cached node, cluster node)
    stale_pods: list = field(default_factory=list)         # (uid, cached rv, cluster rv)
    missed_nodes: list = field(default_factory=list)
    redundant_nodes: list = field(default_factory=list)
    stale_nodes: list = field(default_factory=list)        # (name, cached rv, cluster rv)
    ghost_nodes: list = field(default_factory=list)        # (name, pods left)
    aggregate_mismatches: list = field(default_factory=list)  # (node, field, cached, expected)
    unconfirmed_assumed: list = field(default_factory=list)   # assumed, cluster not bound yet

    @property
    def clean(self) -> bool:
        """No drift. Ghosts and unconfirmed assumed pods are states, not drift."""
        return not (self.missed_pods or self.redundant_pods or self.wrong_node_pods
                    or self.stale_pods or self.missed_nodes or self.redundant_nodes
                    or self.stale_nodes or self.aggregate_mismatches)

    def as_dict(self) -> dict:
        report = asdict(self)
        report["clean"] = self.clean
        return report


def _uid(obj):
    return (obj.get("metadata") or {}).get("uid") or ""


def _rv(obj):
    return (obj.get("metadata") or {}).get("resourceVersion") or ""


def compare(cache, nodes, pods, pending_pods=()) -> CompareReport:
    """Compare `cache` with nodes and pods listed from the API server.

    `pending_pods` are pods the scheduler holds outside the cache (its queue):
    they are neither missed nor redundant, as in upstream's comparer.
    """
    return compare_dump(cache.dump(), nodes, pods, pending_pods)


def compare_dump(dump, nodes, pods, pending_pods=()) -> CompareReport:
    """compare() on a cache's dump: the dump's copies never change, so this may run in
    another thread than the cache's writer while the cache moves on. `pods` is read once,
    one at a time, and none is kept unless it drifted: the cached pods are indexed and
    each listed pod takes its own out (at 600,000 pods, sets and a dict of the listed
    pods' keys held the comparison hundreds of megabytes)."""
    report = CompareReport()
    pending = {_uid(p) for p in pending_pods}
    assumed = dump.assumed_pods
    # key -> PodInfo of the cached pods not listed yet (a PodInfo is on its node_name's
    # NodeInfo, a deleted node's included)
    cached = {pod_info.key: pod_info for info in dump.nodes.values() for pod_info in info.pods}
    for pod in pods:
        uid = _uid(pod)
        node = (pod.get("spec") or {}).get("nodeName")
        bound = node and (pod.get("status") or {}).get("phase") not in _TERMINATED
        pod_info = cached.pop(uid, None)
        if pod_info is None:
            if bound and uid not in pending:
                report.missed_pods.append(uid)
            continue
        if bound:
            if node != pod_info.node_name:
                report.wrong_node_pods.append((uid, pod_info.node_name, node))
            elif uid not in assumed and pod_info.resource_version != _rv(pod):
                report.stale_pods.append((uid, pod_info.resource_version, _rv(pod)))
        elif uid in assumed:
            report.unconfirmed_assumed.append(uid)
        elif uid not in pending:
            report.redundant_pods.append(uid)
    report.redundant_pods.extend(uid for uid in cached if uid not in pending)
    report.missed_pods = sorted(set(report.missed_pods))

    cluster_nodes = {(n.get("metadata") or {}).get("name"): n for n in nodes}
    for name, info in dump.nodes.items():
        if not info.has_node:
            report.ghost_nodes.append((name, len(info.pods)))
            continue
        node = cluster_nodes.get(name)
        if node is None:
            report.redundant_nodes.append(name)
            continue
        cached_rv = _rv(info.node)
        if cached_rv != _rv(node):
            report.stale_nodes.append((name, cached_rv, _rv(node)))
        elif info.allocatable != node_allocatable(node):
            report.aggregate_mismatches.append(
                (name, "allocatable", info.allocatable, node_allocatable(node)))
        actual, expected = info.aggregates(), info.recomputed_aggregates()
        for key in actual:
            if actual[key] != expected[key]:
                report.aggregate_mismatches.append((name, key, actual[key], expected[key]))
    report.missed_nodes = sorted(n for n in cluster_nodes
                                 if n not in dump.nodes or not dump.nodes[n].has_node)
    for lst in (report.redundant_pods, report.wrong_node_pods, report.stale_pods,
                report.redundant_nodes, report.stale_nodes, report.ghost_nodes,
                report.unconfirmed_assumed):
        lst.sort()
    return report
