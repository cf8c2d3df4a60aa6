"""What the read model shows of a node or a pod beyond the cache's aggregates.

Why apart from owner.py: the owner builds rows in its one thread; these are pure
functions of what the cache holds, so they are tested alone and the owner's row
building stays a list of fields. The percentages are computed here once per changed
node so that the nodes table sorts and filters, and the heat map colours, in SQL.
"""
from schedcache.resource import pod_requests

from dashboard.readmodel.cluster_state import GPU, percent as _percent

CONDITION_FIELDS = ("type", "status", "reason", "message", "lastTransitionTime")


def node_details(info) -> dict:
    """A NodeInfo's labels, taints, conditions and utilisation, as NodeRecord's columns.
    A node deleted with pods left has none of the first three."""
    node = info.node or {}
    spec, status = node.get("spec") or {}, node.get("status") or {}
    requested, allocatable = info.requested, info.allocatable
    return {
        "labels": (node.get("metadata") or {}).get("labels") or {},
        "taints": [{"key": t.get("key", ""), "value": t.get("value", ""),
                    "effect": t.get("effect", "")} for t in spec.get("taints") or ()],
        "conditions": [{name: c[name] for name in CONDITION_FIELDS if c.get(name)}
                       for c in status.get("conditions") or ()],
        "unschedulable": bool(spec.get("unschedulable")),
        "cpu_percent": _percent(requested.milli_cpu, allocatable.milli_cpu),
        "memory_percent": _percent(requested.memory, allocatable.memory),
        "gpu_percent": _percent(requested.scalar_resources.get(GPU),
                                allocatable.scalar_resources.get(GPU)),
    }


def pod_request_columns(pod) -> dict:
    """A pod Mapping's requests as PodRecord's columns (a pending pod, or one that left
    the cache while pending in the cluster: an expired or forgotten one keeps them)."""
    requested, _ = pod_requests((pod or {}).get("spec") or {})
    return {"milli_cpu": requested.milli_cpu, "memory": requested.memory,
            "scalar_resources": dict(requested.scalar_resources)}
