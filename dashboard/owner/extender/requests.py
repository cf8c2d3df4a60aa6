"""kube-scheduler's extender calls as JSON: reading a request, and building a result.

The extender API's Go types (k8s.io/kube-scheduler/extender/v1 types.go) carry no json
tags, so kube-scheduler sends and reads the Go field names as they are ("Pod", "Nodes",
"NodeNames", "FailedNodes", ...), and Go's decoder matches keys case-insensitively: this
reads them the same way. Everything here only validates and reshapes; deciding is
core.Extender's. A malformed request raises ExtenderUserError (the HTTP layer's 400), a
pod the watch has not shown PodNotSeen (owner_calls.py parks the call until it does).
A filter call's body itself is decoded by filter_args.py.
"""
import re
from typing import Optional

# The API server gives every object a random UUID (shared k8s-wire: "uid": "79d4..."); a uid
# of another form can never be shown by the watch, so a call naming one is not waited for.
API_SERVER_UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


class ExtenderUserError(ValueError):
    """The request is malformed or names a pod the extender cannot act on: HTTP 400."""

    status = 400


class PodNotSeen(ExtenderUserError):
    """The call names a uid the owner's watch has not shown (yet): `uid`."""

    def __init__(self, uid: str, message: str):
        super().__init__(message)
        self.uid = uid


# --- reading kube-scheduler's JSON -----------------------------------------------------------
_MISSING = object()


def field(obj: dict, name: str, default=None):
    """obj[name], matched like Go's encoding/json: exact key first, then case-insensitive."""
    value = obj.get(name, _MISSING)
    if value is not _MISSING:
        return value
    lowered = name.lower()
    for key, value in obj.items():
        if isinstance(key, str) and key.lower() == lowered:
            return value
    return default


def json_object(value, what: str) -> dict:
    if not isinstance(value, dict):
        raise ExtenderUserError(f"{what} must be a JSON object, got {_kind(value)}")
    return value


def _kind(value) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__)


def pod_identity(args, verb: str):
    """(pod, uid, namespace, name) of an ExtenderArgs / ExtenderPreemptionArgs."""
    json_object(args, f"the {verb} request body")
    pod = field(args, "Pod")
    if pod is None:
        raise ExtenderUserError(f"the {verb} request has no Pod")
    json_object(pod, "Pod")
    metadata = json_object(pod.get("metadata"), "Pod.metadata") if "metadata" in pod else None
    if metadata is None:
        raise ExtenderUserError("Pod has no metadata")
    uid = metadata.get("uid")
    if not isinstance(uid, str) or not uid:
        raise ExtenderUserError("Pod.metadata.uid is missing or empty: the extender tracks "
                                "pods by uid")
    name, namespace = metadata.get("name"), metadata.get("namespace", "")
    if not isinstance(name, str) or not name:
        raise ExtenderUserError(f"pod {uid}: Pod.metadata.name is missing or empty")
    if not isinstance(namespace, str):
        raise ExtenderUserError(f"pod {uid}: Pod.metadata.namespace is not a string")
    spec = pod.get("spec", {})
    if not isinstance(spec, dict):
        raise ExtenderUserError(f"pod {namespace}/{name}: Pod.spec must be an object")
    return pod, uid, namespace or "", name


class Candidates:
    """The candidate nodes of a filter call, in the form kube-scheduler sent them."""

    __slots__ = ("names", "name_set", "node_list", "by_name")

    def __init__(self, names, node_list=None, by_name=None, name_set=None):
        self.names = names            # node names in kube-scheduler's order (as sent)
        self.name_set = frozenset(names) if name_set is None else name_set
        self.node_list = node_list    # the NodeList sent (nodeCacheCapable false), or None
        self.by_name = by_name        # name -> Node object (nodeCacheCapable false)

    @property
    def cache_capable(self) -> bool:
        return self.node_list is None

    def listed(self, names) -> tuple:
        """(Nodes, NodeNames) of a result that lists `names`, in the input's form."""
        names = list(names)
        if self.cache_capable:
            return None, names
        envelope = {k: v for k, v in self.node_list.items() if k != "items"}
        envelope["items"] = [self.by_name[n] for n in names]
        return envelope, None


class LastNodeNames:
    """The last NodeNames checked, and their set.

    kube-scheduler sends the same names pod after pod (every node that passed its
    own filters), and checking and hashing 5,000 fresh strings costs half of a filter
    call: one list comparison in C replaces both when nothing changed. A repeated name
    needs no removal: results are dicts or built from the set.
    """

    def __init__(self):
        self.names, self.name_set = [], frozenset()

    def candidates(self, names) -> Candidates:
        if names != self.names:
            if not isinstance(names, list) or not set(map(type, names)) <= {str} or "" in names:
                raise ExtenderUserError("NodeNames must be an array of node names")
            self.names, self.name_set = names, frozenset(names)
        return Candidates(names, name_set=self.name_set)


def candidates_of(args, last_names: LastNodeNames) -> Candidates:
    names = field(args, "NodeNames")
    if names is not None:
        return last_names.candidates(names)
    node_list = field(args, "Nodes")
    if node_list is None:
        raise ExtenderUserError("the filter request has neither NodeNames (nodeCacheCapable) "
                                "nor Nodes")
    json_object(node_list, "Nodes")
    items = node_list.get("items")
    if items is None:
        items = []
    if not isinstance(items, list):
        raise ExtenderUserError("Nodes.items must be an array of Node objects")
    by_name = {}
    for index, node in enumerate(items):
        name = ((node.get("metadata") or {}).get("name")) if isinstance(node, dict) else None
        if not isinstance(name, str) or not name:
            raise ExtenderUserError(f"Nodes.items[{index}] has no metadata.name")
        by_name.setdefault(name, node)
    return Candidates(list(by_name), node_list, by_name)


def preemption_nodes(args) -> frozenset:
    """The candidate nodes of a preempt call, from whichever map kube-scheduler sent
    (NodeNameToMetaVictims with nodeCacheCapable, NodeNameToVictims without: 03f)."""
    nodes = set()
    for key in ("NodeNameToMetaVictims", "NodeNameToVictims"):
        value = field(args, key)
        if value is None:
            continue
        if not isinstance(value, dict) or not all(isinstance(n, str) and n for n in value):
            raise ExtenderUserError(f"{key} must be an object (node name -> victims)")
        nodes.update(value)
    return frozenset(nodes)


def filter_result(candidates: Optional[Candidates], names=(), failed=None, unresolvable=None,
                  error="") -> dict:
    """An ExtenderFilterResult, keyed as kube-scheduler decodes it."""
    if error or candidates is None:
        nodes, node_names = None, None
    else:
        nodes, node_names = candidates.listed(names)
    return {"Nodes": nodes, "NodeNames": node_names, "FailedNodes": dict(failed or {}),
            "FailedAndUnresolvableNodes": dict(unresolvable or {}), "Error": error}


def binding_result(error="") -> dict:
    return {"Error": error}


def preemption_result(victims_by_node) -> dict:
    return {"NodeNameToMetaVictims": {
        node: {"Pods": [{"UID": v.uid} for v in victims], "NumPDBViolations": 0}
        for node, victims in victims_by_node.items()}}
