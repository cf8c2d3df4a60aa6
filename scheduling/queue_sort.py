"""kube-scheduler's scheduling queue order (its default QueueSort plugin, PrioritySort):
the highest priority first, then the earliest.

Upstream compares the time a pod entered the queue; a pod's creation time stands for it
here (a watch does not show when kube-scheduler queued a pod), and namespace and name
break ties so the order is total. It is the queue's sort, not a promise of what is
placed next: backoff and unschedulable pods waiting for a cluster event step aside.
"""


def queue_key(pod) -> tuple:
    """Sorting pods by this puts them in kube-scheduler's activeQ order."""
    spec, meta = pod.get("spec") or {}, pod["metadata"]
    return (-(spec.get("priority") or 0), meta.get("creationTimestamp") or "",
            meta.get("namespace") or "", meta["name"])
