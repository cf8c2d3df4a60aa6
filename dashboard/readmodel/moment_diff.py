"""Two kept moments compared: the pods that appeared, left, moved or changed state, and
each node's use before and after (the nodes whose use changed).

Why apart from moment.py: a moment is read by every page; a diff is one page's and one
endpoint's, and its lists are bounded (`limit` of each, with the totals) so that an hour
of a churning cluster stays one answer.
"""
from dashboard.readmodel.moment import Moment

DIFF_LIMIT = 500          # items of each list by default
MAX_DIFF_LIMIT = 10_000


def _pod(uid, pod_dict):
    return {"uid": uid, "namespace": pod_dict["namespace"], "name": pod_dict["name"],
            "node": pod_dict["node"], "state": pod_dict["state"]}


def _use(node: dict | None) -> dict | None:
    if node is None:
        return None
    return {"pods": node["pods"], "milli_cpu": node["requested"]["milli_cpu"],
            "memory": node["requested"]["memory"],
            "allocatable_milli_cpu": node["allocatable"]["milli_cpu"],
            "allocatable_memory": node["allocatable"]["memory"]}


def diff(before: Moment, after: Moment, limit: int = DIFF_LIMIT) -> dict:
    old = {p["uid"]: p for p in before.pods()}
    new = {p["uid"]: p for p in after.pods()}
    appeared = [_pod(uid, p) for uid, p in new.items() if uid not in old]
    left = [_pod(uid, p) for uid, p in old.items() if uid not in new]
    moved, changed = [], []
    for uid, p in new.items():
        was = old.get(uid)
        if was is None:
            continue
        if was["node"] != p["node"]:
            moved.append(dict(_pod(uid, p), from_node=was["node"]))
        if was["state"] != p["state"]:
            changed.append(dict(_pod(uid, p), from_state=was["state"]))
    old_nodes = {n["name"]: _use(n) for n in before.nodes()}
    new_nodes = {n["name"]: _use(n) for n in after.nodes()}
    nodes = [{"name": name, "before": old_nodes.get(name), "after": new_nodes.get(name)}
             for name in sorted(old_nodes.keys() | new_nodes.keys())
             if old_nodes.get(name) != new_nodes.get(name)]

    def bounded(items):
        return {"count": len(items), "items": items[:limit]}
    return {"from": {"seq": before.seq, "at": before.at},
            "to": {"seq": after.seq, "at": after.at},
            "appeared": bounded(appeared), "left": bounded(left), "moved": bounded(moved),
            "changed_state": bounded(changed), "nodes": bounded(nodes)}
