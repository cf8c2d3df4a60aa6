"""managedFields entries (server-side field tracking) as the apiserver writes them.

The captures show every object carries them, and they are a large part of a
pod's bytes, so both the generator and the API server build them here.
"""

import orjson

# List fields whose items are identified by these keys ("k:{...}" entries);
# every other list is atomic ("f:tolerations":{}).
_LIST_KEYS = {
    "containers": ("name",), "initContainers": ("name",), "ephemeralContainers": ("name",),
    "volumes": ("name",), "env": ("name",), "volumeMounts": ("mountPath",),
    "ports": ("containerPort", "protocol"), "conditions": ("type",), "podIPs": ("ip",),
    "ownerReferences": ("uid",), "imagePullSecrets": ("name",), "addresses": ("type",),
}
# Struct fields the apiserver treats as atomic even though they are maps.
_ATOMIC = {"nodeSelector", "requiredDuringSchedulingIgnoredDuringExecution",
           "preferredDuringSchedulingIgnoredDuringExecution", "command", "args",
           "tolerations", "hostIPs", "images", "containerStatuses", "initContainerStatuses",
           "podCIDRs", "taints", "finalizers", "nodeInfo", "daemonEndpoints"}


def fields_v1(obj: dict) -> dict:
    """The FieldsV1 set of every field present in `obj` (top level: metadata/spec/status)."""
    return {"f:" + k: _members(v) for k, v in sorted(obj.items())}


def _field(name, value):
    if name in _ATOMIC:
        return {}
    if isinstance(value, dict):
        if not value:
            return {}
        return {".": {}, **_members(value)}
    if isinstance(value, list) and name in _LIST_KEYS and value:
        keys = _LIST_KEYS[name]
        out = {} if name == "containers" else {".": {}}  # a required list has no "." entry
        entries = {}
        for item in value:
            ident = {k: item.get(k, "TCP" if k == "protocol" else None) for k in keys}
            entries["k:" + orjson.dumps(ident).decode()] = _field("", item) if name != "ownerReferences" else {}
        out.update(sorted(entries.items()))
        return out
    return {}


def _members(value: dict) -> dict:
    return {"f:" + k: _field(k, value[k]) for k in sorted(value)}


def managed_entry(manager: str, time: str, fields: dict, *, subresource: str | None = None,
                  operation: str = "Update") -> dict:
    """One managedFields item in the apiserver's key order."""
    entry = {"manager": manager, "operation": operation, "apiVersion": "v1", "time": time,
             "fieldsType": "FieldsV1", "fieldsV1": fields}
    if subresource:
        entry["subresource"] = subresource
    return entry


def manager_name(user_agent: str | None) -> str:
    """The apiserver names the manager after the User-Agent up to the first '/'."""
    return (user_agent or "unknown").split("/", 1)[0]


def track_update(managed: list, old: dict, new: dict, manager: str, now: str,
                 subresource: str | None = None) -> list:
    """managedFields after `manager` changed `old` into `new` (operation Update).

    Approximates the apiserver: the manager's entry gains the changed fields (its
    time moves to now), and fields no longer present in the object are pruned.
    """
    changed = {k: v for k, v in _changed({k: old.get(k) for k in ("metadata", "spec", "status")},
                                         {k: new.get(k) for k in ("metadata", "spec", "status")}
                                         ).items() if v}
    changed.get("metadata", {}).pop("managedFields", None)
    if not any(changed.values()):
        return managed
    gained = fields_v1(changed)
    out, found = [], False
    for entry in managed:
        if (entry.get("manager"), entry.get("operation"), entry.get("subresource")) == (
                manager, "Update", subresource):
            found = True
            fields = _prune(_union(entry.get("fieldsV1") or {}, gained), new)
            entry = {**entry, "time": now, "fieldsV1": fields}
        out.append(entry)
    if not found:
        out.append(managed_entry(manager, now, gained, subresource=subresource))
    return out


def _changed(old, new) -> dict:
    out = {}
    for k, v in (new or {}).items():
        o = old.get(k) if isinstance(old, dict) else None
        if v == o:
            continue
        if isinstance(v, dict) and isinstance(o, dict):
            sub = _changed(o, v)
            if sub:
                out[k] = sub
        else:
            out[k] = v
    return out


def _union(a: dict, b: dict) -> dict:
    out = dict(a)
    for k, v in b.items():
        out[k] = _union(out[k], v) if k in out else v
    return dict(sorted(out.items()))


def _prune(fields: dict, obj) -> dict:
    if not isinstance(obj, dict):
        return fields
    out = {}
    for k, v in fields.items():
        if k.startswith("f:"):
            if k[2:] not in obj:
                continue
            v = _prune(v, obj[k[2:]])
        out[k] = v
    return out
