"""Where to put a pending pod: the zone round robin over nodes it fits on.

The embedded default's scheduler, so that the simulated cluster's pods pass
through every state (assumed, bound, confirmed, forgotten, expired). It asks
only what the cache knows: free resources and pod slots; the full algorithm
(affinity, taints, preemption) is the extender's.
"""
from schedcache.resource import pod_requests


def fits(info, requested) -> bool:
    """Does a pod requesting `requested` fit in the node's free room?"""
    if not info.has_node:
        return False
    allocatable, used = info.allocatable, info.requested
    if len(info.pod_keys) + 1 > allocatable.allowed_pod_number:
        return False
    if used.milli_cpu + requested.milli_cpu > allocatable.milli_cpu:
        return False
    if used.memory + requested.memory > allocatable.memory:
        return False
    if used.ephemeral_storage + requested.ephemeral_storage > allocatable.ephemeral_storage > 0:
        return False
    free = allocatable.scalar_resources
    for name, amount in requested.scalar_resources.items():
        if used.scalar_resources.get(name, 0) + amount > free.get(name, 0):
            return False
    return True


def choose_node(cache, pod, tries=64):
    """The next node of the round robin that the pod fits on, or None."""
    requested, _ = pod_requests(pod.get("spec") or {})
    for _ in range(min(tries, cache.node_tree.num_nodes)):
        name = cache.node_tree.next()
        info = cache.node_info(name)
        if info is not None and fits(info, requested):
            return name
    return None
