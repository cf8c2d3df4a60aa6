"""What a comparison's drift fetches again: each drifted object, or past a share, a relist.

Why not always relist: each of the demo's lost-events episodes leaves a few hundred pods
drifted, and a relist of every pod to heal them held the watch's events behind it for
minutes at 600,000 pods (issue 26: the feed's lag p99 251 s, the pages' p99 with it). The
decoder fetches each drifted object instead (`decoder._repair`: a GET each) and hands them
over as DecodedRepairs. Past REPAIR_SHARE of the listed objects (at least REPAIR_MIN) one
relist is cheaper than a GET each, and it is asked for instead.

schedcache's comparison reads the cache, which holds bound pods only; the owner's pending
pods (the watch's pods without a node) are compared here with the same lists
(`pending_drift`). A pending pod whose deletion the watch lost would otherwise pend for
good, where the relist after any drift used to heal it.
"""
from dataclasses import dataclass, field

# Of the listed objects: a GET costs the decoder about what 8 listed pods do
# (bench/repair_bench.py), and a relist makes the owner apply every pod again besides.
REPAIR_SHARE = 0.05
REPAIR_MIN = 500


@dataclass
class PendingDrift:
    """The owner's pending pods against the lists (uids)."""
    missed: list = field(default_factory=list)     # listed without a node, not pending
    redundant: list = field(default_factory=list)  # pending, not listed
    stale: list = field(default_factory=list)      # (uid, pending rv, listed rv)

    @property
    def clean(self) -> bool:
        return not (self.missed or self.redundant or self.stale)

    def as_dict(self) -> dict:
        return {"pending_missed": self.missed, "pending_redundant": self.redundant,
                "pending_stale": self.stale}


def pending_drift(held: dict, pods: list) -> PendingDrift:
    """`held`: uid -> version of the pending pods when the cache was dumped; `pods`: the
    comparer's lists (decoder.comparable_pod), read once: of the listed only the held are
    remembered."""
    drift, listed = PendingDrift(), set()
    for uid, version, node, *_ in pods:
        if uid in held:
            listed.add(uid)
            if held[uid] != (version or ""):
                drift.stale.append((uid, held[uid], version or ""))
        elif not node:
            drift.missed.append(uid)
    drift.redundant = [uid for uid in held if uid not in listed]
    return drift


def listed_names(pods: list, uids) -> dict:
    """uid -> (namespace, name) of the listed pods among `uids`: what a pod the owner does
    not hold is fetched by."""
    wanted = set(uids)
    return {uid: (namespace or "", name or "")
            for uid, _, _, _, namespace, name in pods if uid in wanted}


def repair_plan(report, pending: PendingDrift, names: dict, held_name, listed: dict) -> dict:
    """kind -> the keys to fetch again (a pod's (namespace, name, uid), a node's name), or
    None to relist the kind; kinds without drift are left out. `report`: the settled
    CompareReport; `names`: listed_names() of the missed pods; `held_name(uid)`: the
    (namespace, name) of a pod the owner holds, or None; `listed`: kind -> how many were
    listed."""
    uids = dict.fromkeys([*report.missed_pods, *pending.missed, *report.redundant_pods,
                          *pending.redundant, *(s[0] for s in report.stale_pods),
                          *(s[0] for s in pending.stale), *(w[0] for w in report.wrong_node_pods)])
    pods = []
    for uid in uids:
        name = names.get(uid) or held_name(uid)
        if name is not None:
            pods.append((*name, uid))
    nodes = list(dict.fromkeys([*report.missed_nodes, *report.redundant_nodes,
                                *(s[0] for s in report.stale_nodes)]))
    plan = {}
    for kind, keys in (("pods", pods), ("nodes", nodes)):
        if keys:
            most = max(REPAIR_MIN, int(listed.get(kind, 0) * REPAIR_SHARE))
            plan[kind] = keys if len(keys) <= most else None
    return plan
