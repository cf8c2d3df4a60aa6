"""The `pending_pods` command: the pending pods in kube-scheduler's queue order
(scheduling.queue_sort), each with its position in the whole queue and its first reason
from the last complete sweep (pending_reasons.py), one page of them filtered by reason
and namespace, and the counts by reason, namespace and priority.

Why in the owner: the creation times, priorities and reasons live in its memory, so it
sorts there and only a page crosses Redis. It sorts every pending pod the watch shows
(not those assumed and awaiting their bind) on each ask: a few milliseconds for
thousands of pods (bench/pending_bench.py), and no index to keep at every flush.
"""
from collections import Counter

from dashboard.owner.commands import CommandError
from dashboard.owner.pending_pods import PendingPods
from dashboard.wire.pending import MAX_FILTER, MAX_LIMIT

# A pod that came after the last complete sweep began has no reason yet.
UNSWEPT = "not diagnosed yet (the next sweep counts it)"


def _filter(args, key) -> str:
    value = args.get(key) or ""
    if not isinstance(value, str) or len(value) > MAX_FILTER:
        raise CommandError(400, f"{key} must be text of at most {MAX_FILTER} characters")
    return value


def _count(args, key, default, most) -> int:
    value = args.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= most:
        raise CommandError(400, f"{key} must be a whole number from 0 to {most}")
    return value


def _largest_first(counts: Counter) -> list:
    """[[value, pods]...], as JSON carries them: the most pods first, then by value."""
    return [[value, pods] for value, pods in
            sorted(counts.items(), key=lambda item: (-item[1], item[0]))]


def pending_page(pending: PendingPods, cache, reasons: dict, args: dict) -> dict:
    """`pending`: the owner's; `reasons`: uid -> first reason.
    args: reason?, namespace?, offset?, limit?. Returns {"queued": pods in the queue,
    "total": those matching, "counts": {"reason": [[reason, pods]...] under the namespace
    filter, "namespace": [...] under the reason filter, "priority": [[priority, pods]...]
    under both}, "items": [{uid, namespace, name, priority, created, position, reason}]}.
    Read from each pod's queue order (priority, creation, namespace, name): none is thawed."""
    reason, namespace = _filter(args, "reason"), _filter(args, "namespace")
    offset, limit = _count(args, "offset", 0, 10 ** 9), _count(args, "limit", 50, MAX_LIMIT)
    queue = sorted((entry for entry in pending.entries()
                    if cache.pod_info(entry.info.key) is None), key=lambda entry: entry.order)
    by_reason, by_namespace, by_priority = Counter(), Counter(), Counter()
    matching = []
    for position, entry in enumerate(queue, 1):
        uid = entry.info.key
        negated_priority, created, pod_namespace, name = entry.order
        why = reasons.get(uid, UNSWEPT)
        in_namespace = not namespace or pod_namespace == namespace
        for_reason = not reason or why == reason
        if in_namespace:
            by_reason[why] += 1
        if for_reason:
            by_namespace[pod_namespace] += 1
        if in_namespace and for_reason:
            by_priority[-negated_priority] += 1
            matching.append((position, uid, entry.order, why))
    items = [{"uid": uid, "namespace": pod_namespace, "name": name, "priority": -negated_priority,
              "created": created or None, "position": position, "reason": why}
             for position, uid, (negated_priority, created, pod_namespace, name), why
             in matching[offset:offset + limit]]
    return {"queued": len(queue), "total": len(matching),
            "counts": {"reason": _largest_first(by_reason),
                       "namespace": _largest_first(by_namespace),
                       "priority": [[priority, pods] for priority, pods
                                    in sorted(by_priority.items(), reverse=True)]},
            "items": items}
