"""The three PATCH flavours the apiserver accepts (plain application/json is a 415).

Strategic merge covers the simple cases: maps merge like a JSON merge patch,
lists with a known merge key (containers by name, ...) merge item by item,
other lists are replaced; `$patch` directives are not supported.
"""

import copy

from simcluster.status import ApiError, bad_request

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"

_MERGE_KEYS = {"containers": "name", "initContainers": "name", "ephemeralContainers": "name",
               "volumes": "name", "env": "name", "volumeMounts": "mountPath",
               "ports": "containerPort", "conditions": "type", "imagePullSecrets": "name",
               "ownerReferences": "uid", "addresses": "type", "taints": "key"}


def apply_patch(content_type: str, target: dict, patch) -> dict:
    """A new object: `target` (not modified) with `patch` applied."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media == MERGE:
        return _merge(target, _expect_object(patch), strategic=False)
    if media == STRATEGIC:
        return _merge(target, _expect_object(patch), strategic=True)
    if media == JSON_PATCH:
        if not isinstance(patch, list):
            raise bad_request("json: cannot unmarshal object into Go value of type "
                              "jsonpatch.Patch")
        return _json_patch(target, patch)
    raise ApiError(415, "415: Unsupported Media Type", "UnsupportedMediaType", {})


def _expect_object(patch):
    if not isinstance(patch, dict):
        raise bad_request("json: cannot unmarshal array into Go value of type "
                          "map[string]interface {}")
    return patch


def _merge(target, patch, strategic: bool, key: str = ""):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        elif (strategic and isinstance(v, list) and k in _MERGE_KEYS
              and isinstance(out.get(k), list)):
            out[k] = _merge_list(out[k], v, _MERGE_KEYS[k])
        else:
            out[k] = _merge(out.get(k), v, strategic, k)
    return out


def _merge_list(current: list, patch: list, merge_key: str) -> list:
    out = list(current)
    index = {item.get(merge_key): i for i, item in enumerate(out) if isinstance(item, dict)}
    for item in patch:
        i = index.get(item.get(merge_key)) if isinstance(item, dict) else None
        if i is None:
            out.append(copy.deepcopy(item))
        else:
            out[i] = _merge(out[i], item, True)
    return out


def _pointer(path: str) -> list:
    if path == "":
        return []
    if not path.startswith("/"):
        raise bad_request(f'the server rejected our request due to an error in our request: '
                          f'invalid JSON pointer "{path}"')
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _parent(doc, parts):
    node = doc
    for p in parts[:-1]:
        node = node[int(p)] if isinstance(node, list) else node[p]
    return node


def _json_patch(target: dict, ops: list) -> dict:
    doc = copy.deepcopy(target)
    try:
        for op in ops:
            kind, parts = op.get("op"), _pointer(op.get("path", ""))
            if kind in ("move", "copy"):
                src = _pointer(op["from"])
                value = _get(doc, src)
                if kind == "move":
                    _remove(doc, src)
                _add(doc, parts, copy.deepcopy(value))
            elif kind == "add":
                _add(doc, parts, copy.deepcopy(op["value"]))
            elif kind == "remove":
                _remove(doc, parts)
            elif kind == "replace":
                _remove(doc, parts)
                _add(doc, parts, copy.deepcopy(op["value"]))
            elif kind == "test":
                if _get(doc, parts) != op.get("value"):
                    raise ApiError(422, f"the server rejected our request due to an error in "
                                        f"our request: testing value {op.get('path')} failed",
                                   "Invalid")
            else:
                raise bad_request(f"Unexpected kind: {kind}")
    except (KeyError, IndexError, ValueError, TypeError) as e:
        raise ApiError(422, f"the server rejected our request due to an error in our "
                            f"request: {e!r}", "Invalid") from None
    return doc


def _get(doc, parts):
    node = doc
    for p in parts:
        node = node[int(p)] if isinstance(node, list) else node[p]
    return node


def _add(doc, parts, value):
    parent, last = _parent(doc, parts), parts[-1]
    if isinstance(parent, list):
        parent.insert(len(parent) if last == "-" else int(last), value)
    else:
        parent[last] = value


def _remove(doc, parts):
    parent, last = _parent(doc, parts), parts[-1]
    if isinstance(parent, list):
        del parent[int(last)]
    else:
        del parent[last]
