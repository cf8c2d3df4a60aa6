"""The filters: each takes (PodView, NodeRecord) and returns None or why the node is refused.

Reason strings are kube-scheduler's own, so they read the same as the events
users already know. Filters run in upstream's order and a node stops at the
first refusal. `RESOLVABLE` are the refusals that evicting pods can cure
(resources and host ports); the others make a node useless to preemption.
"""
from .taints import UNSCHEDULABLE_TAINT, first_untolerated, tolerates

NODE_NOT_FOUND = "node(s) not found in the scheduler cache"
NODE_NAME = "node(s) didn't match the requested node name"
UNSCHEDULABLE = "node(s) were unschedulable"
NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
PORTS = "node(s) didn't have free ports for the requested pod ports"
TOO_MANY_PODS = "Too many pods"
UNTOLERATED_TAINT = "node(s) had untolerated taint {{{key}: {value}}}"


def insufficient(resource: str) -> str:
    return f"Insufficient {resource}"


def untolerated_taint_reason(taint: tuple) -> str:
    return UNTOLERATED_TAINT.format(key=taint[0], value=taint[1])


def node_name(pod, node):
    if pod.node_name and pod.node_name != node.name:
        return NODE_NAME
    return None


def node_unschedulable(pod, node):
    if node.unschedulable and not any(tolerates(t, UNSCHEDULABLE_TAINT) for t in pod.tolerations):
        return UNSCHEDULABLE
    return None


def taint_toleration(pod, node):
    taint_id = node.taint_id
    if not taint_id:
        return None
    verdicts = pod.taint_verdicts
    try:
        return verdicts[taint_id]
    except KeyError:
        taint = first_untolerated(node.taints, pod.tolerations)
        verdict = verdicts[taint_id] = None if taint is None else untolerated_taint_reason(taint)
        return verdict


def node_affinity(pod, node):
    matcher = pod.node_matcher
    if matcher is None or matcher(node.labels, node.name):
        return None
    return NODE_AFFINITY


def node_ports(pod, node):
    if not pod.host_ports:
        return None
    check = node.info.check_host_port_conflict
    for ip, protocol, port in pod.host_ports:
        if check(ip, protocol, port):
            return PORTS
    return None


def fit_reasons(pod, free_pods, free_cpu, free_memory, free_ephemeral, free_scalars) -> list:
    """Every resource the pod lacks, given what is free (shared with preemption)."""
    reasons = []
    if free_pods < 1:
        reasons.append(TOO_MANY_PODS)
    if not pod.has_requests:
        return reasons
    if pod.milli_cpu and pod.milli_cpu > free_cpu:
        reasons.append(insufficient("cpu"))
    if pod.memory and pod.memory > free_memory:
        reasons.append(insufficient("memory"))
    if pod.ephemeral_storage and pod.ephemeral_storage > free_ephemeral:
        reasons.append(insufficient("ephemeral-storage"))
    for name, amount in pod.scalars:
        if amount > free_scalars.get(name, 0):
            reasons.append(insufficient(name))
    return reasons


def resources_fit(pod, node):
    """requested + pod <= allocatable for pods, cpu, memory, ephemeral storage, extended."""
    if (node.free_pods >= 1 and pod.milli_cpu <= node.free_cpu and pod.memory <= node.free_memory
            and pod.ephemeral_storage <= node.free_ephemeral and not pod.scalars):
        return None   # fast path: nothing lacks
    reasons = fit_reasons(pod, node.free_pods, node.free_cpu, node.free_memory,
                          node.free_ephemeral, node.free_scalars)
    return ", ".join(reasons) if reasons else None


# Upstream order: NodeUnschedulable, NodeName, TaintToleration, NodeAffinity, NodePorts, Fit.
ALL = (node_unschedulable, node_name, taint_toleration, node_affinity, node_ports, resources_fit)
RESOLVABLE = frozenset((node_ports, resources_fit))


def for_pod(pod) -> tuple:
    """The filters that can refuse anything for this pod (the others are skipped)."""
    chosen = [node_unschedulable]
    if pod.node_name:
        chosen.append(node_name)
    chosen.append(taint_toleration)
    if pod.node_matcher is not None:
        chosen.append(node_affinity)
    if pod.host_ports:
        chosen.append(node_ports)
    chosen.append(resources_fit)
    return tuple(chosen)


def run(filters, pod, node):
    """(reason, filter) of the first refusal, or (None, None) when the node fits."""
    for check in filters:
        reason = check(pod, node)
        if reason is not None:
            return reason, check
    return None, None
