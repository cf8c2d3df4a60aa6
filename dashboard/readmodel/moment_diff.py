"""Two kept moments compared: the pods that appeared, left, moved or changed state, and
each node's use before and after (the nodes whose use changed).

Why apart from moment.py: a moment is read by every page; a diff is one page's and one
endpoint's, and its lists are bounded (`limit` of each, with the totals) so that an hour
of a churning cluster stays one answer.
"""
import heapq

from dashboard.readmodel.cluster_state import (
    ALLOCATABLE,
    NAME,
    NAMESPACE,
    NODE,
    NOTHING,
    STATE,
    SUM_PODS,
    SUM_REQUESTED,
)
from dashboard.readmodel.moment import Moment

DIFF_LIMIT = 500          # items of each list by default
MAX_DIFF_LIMIT = 10_000


def _pod(uid, pod, **more) -> dict:
    return {"uid": uid, "namespace": pod[NAMESPACE], "name": pod[NAME], "node": pod[NODE],
            "state": pod[STATE], **more}


def _uses(found: Moment) -> dict:
    """node name -> its use: pods, requested CPU and memory, allocatable (from the nodes'
    sums, no pass over the pods)."""
    uses = {}
    for name, node in found.state.nodes.items():
        sums = found.state.sums.get(name)
        allocatable = node[ALLOCATABLE] or NOTHING
        uses[name] = ([sums[SUM_PODS], sums[SUM_REQUESTED][0], sums[SUM_REQUESTED][1]]
                      if sums else [0, 0, 0]) + [allocatable[0], allocatable[1]]
    return uses


def _use(use) -> dict | None:
    if use is None:
        return None
    return dict(zip(("pods", "milli_cpu", "memory", "allocatable_milli_cpu",
                     "allocatable_memory"), use))


def diff(before: Moment, after: Moment, limit: int = DIFF_LIMIT) -> dict:
    """Walks the two states' pods once each; only the first `limit` of each list (by
    namespace and name) become rows: an hour of churn changes tens of thousands."""
    old, new = before.state.pods, after.state.pods
    moved, changed = [], []
    for uid, pod in new.items():
        was = old.get(uid)
        if was is None or was is pod:     # `is`: the same pod, shared from one checkpoint
            continue
        if was[NODE] != pod[NODE]:
            moved.append(uid)
        if was[STATE] != pod[STATE]:
            changed.append(uid)
    old_uses, new_uses = _uses(before), _uses(after)
    nodes = [{"name": name, "before": _use(old_uses.get(name)),
              "after": _use(new_uses.get(name))}
             for name in sorted(old_uses.keys() | new_uses.keys())
             if old_uses.get(name) != new_uses.get(name)]

    def first(uids, pods, row) -> dict:
        uids = list(uids)
        chosen = heapq.nsmallest(limit, uids, key=lambda uid: (pods[uid][NAMESPACE],
                                                                 pods[uid][NAME], uid))
        return {"count": len(uids), "items": [row(uid) for uid in chosen]}
    return {"from": {"seq": before.seq, "at": before.at},
            "to": {"seq": after.seq, "at": after.at},
            "appeared": first(new.keys() - old.keys(), new, lambda uid: _pod(uid, new[uid])),
            "left": first(old.keys() - new.keys(), old, lambda uid: _pod(uid, old[uid])),
            "moved": first(moved, new, lambda uid: _pod(uid, new[uid],
                                                         from_node=old[uid][NODE])),
            "changed_state": first(changed, new, lambda uid: _pod(uid, new[uid],
                                                                  from_state=old[uid][STATE])),
            "nodes": {"count": len(nodes), "items": nodes[:limit]}}
