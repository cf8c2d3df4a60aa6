"""The smallest pod object the cache takes where only a pod's identity matters (the cache
keys pods by uid), with the node a forget must name."""


def pod_ref(uid: str, node: str = "") -> dict:
    return {"metadata": {"uid": uid}, "spec": {"nodeName": node}}
