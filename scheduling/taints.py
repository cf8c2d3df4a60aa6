"""Taints and tolerations, for filtering (kube-scheduler's TaintToleration filter).

Only NoSchedule and NoExecute taints keep a pod off a node; PreferNoSchedule
is a scoring hint and is ignored here.
"""
FILTER_EFFECTS = ("NoSchedule", "NoExecute")
UNSCHEDULABLE_TAINT = ("node.kubernetes.io/unschedulable", "", "NoSchedule")


def node_filter_taints(node) -> tuple:
    """(key, value, effect) of the node's NoSchedule/NoExecute taints, in spec order."""
    taints = ((node.get("spec") or {}).get("taints")) or ()
    return tuple((t.get("key") or "", t.get("value") or "", t.get("effect") or "")
                 for t in taints if t.get("effect") in FILTER_EFFECTS)


def pod_tolerations(spec) -> tuple:
    """(key, operator, value, effect) of the pod's tolerations; an empty operator means Equal."""
    return tuple((t.get("key") or "", t.get("operator") or "Equal", t.get("value") or "",
                  t.get("effect") or "")
                 for t in (spec.get("tolerations") or ()))


def tolerates(toleration: tuple, taint: tuple) -> bool:
    """Does one toleration tolerate one taint?

    The effect must match unless the toleration leaves it empty. Exists
    matches any value of the key, and an empty key with Exists matches every
    taint; Equal needs the same key and value.
    """
    key, operator, value, effect = toleration
    taint_key, taint_value, taint_effect = taint
    if effect and effect != taint_effect:
        return False
    if operator == "Exists":
        return not key or key == taint_key
    if operator == "Equal":
        return key == taint_key and value == taint_value
    return False


def first_untolerated(taints: tuple, tolerations: tuple):
    """The first taint no toleration tolerates, or None."""
    for taint in taints:
        if not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None
