"""Discovery documents (/version, /api, /api/v1) for what this server actually serves.

Entries are copied from kube-apiserver v1.36.2 (capture 00, 01, 01b); verbs are
trimmed to those implemented here, so clients that read discovery are not misled.
"""

import orjson

# /version is the one endpoint the apiserver pretty-prints (no trailing newline).
VERSION = {"major": "1", "minor": "36", "emulationMajor": "1", "emulationMinor": "36",
           "minCompatibilityMajor": "1", "minCompatibilityMinor": "35",
           "gitVersion": "v1.36.2", "gitCommit": "98b35193b2ac7a23a673325f5e9b830ecd5ba406",
           "gitTreeState": "clean", "buildDate": "2026-11-22T07:05:31Z",
           "goVersion": "go1.27.3", "compiler": "gc", "platform": "linux/amd64"}

_RESOURCES = [
    {"name": "bindings", "singularName": "binding", "namespaced": True, "kind": "Binding",
     "verbs": ["create"]},
    {"name": "namespaces", "singularName": "namespace", "namespaced": False,
     "kind": "Namespace", "verbs": ["create", "get", "list", "watch"], "shortNames": ["ns"],
     "storageVersionHash": "Q3oi5N2YM8M="},
    {"name": "nodes", "singularName": "node", "namespaced": False, "kind": "Node",
     "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update",
               "watch"], "shortNames": ["no"], "storageVersionHash": "XwShjMxG9Fs="},
    {"name": "nodes/status", "singularName": "", "namespaced": False, "kind": "Node",
     "verbs": ["get", "patch", "update"]},
    {"name": "persistentvolumeclaims", "singularName": "persistentvolumeclaim",
     "namespaced": True, "kind": "PersistentVolumeClaim",
     "verbs": ["create", "delete", "get", "list", "watch"], "shortNames": ["pvc"],
     "storageVersionHash": "QWTyNDq0dC4="},
    {"name": "pods", "singularName": "pod", "namespaced": True, "kind": "Pod",
     "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update",
               "watch"], "shortNames": ["po"], "categories": ["all"],
     "storageVersionHash": "xPOwRZ+Yhw8="},
    {"name": "pods/binding", "singularName": "", "namespaced": True, "kind": "Binding",
     "verbs": ["create"]},
    {"name": "pods/status", "singularName": "", "namespaced": True, "kind": "Pod",
     "verbs": ["get", "patch", "update"]},
]


def version_body() -> bytes:
    return orjson.dumps(VERSION, option=orjson.OPT_INDENT_2)


def api_versions_body(server_address: str) -> bytes:
    return orjson.dumps({"kind": "APIVersions", "versions": ["v1"],
                         "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                                         "serverAddress": server_address}]}
                        ) + b"\n"


def api_v1_body() -> bytes:
    return orjson.dumps({"kind": "APIResourceList", "groupVersion": "v1",
                         "resources": _RESOURCES}) + b"\n"


def api_groups_body() -> bytes:
    return orjson.dumps({"kind": "APIGroupList", "apiVersion": "v1", "groups": []}) + b"\n"
