"""Kubernetes semantics for pods, nodes, namespaces and claims: the one place state changes.

The HTTP handlers, the churn generator and the simulated kubelet all call these
methods, so a bind or a delete behaves the same whoever asks. Behaviour follows
the captures: server defaults on create, compare-and-swap on resourceVersion,
no-op writes leave the object (and the watch) untouched, status written through
the main resource is ignored, graceful deletion of bound pods, binding.
"""

import random
import re
import time
import uuid
from datetime import datetime, timezone

import orjson

from simcluster.defaults import (META_ORDER, POD_SPEC_ORDER, POD_STATUS_ORDER,
                                 default_pod_spec, new_claim, new_node, new_pod, ordered)
from simcluster.fields import fields_v1, managed_entry, track_update
from simcluster.patch import apply_patch
from simcluster.status import (ApiError, already_exists, bad_request, conflict, invalid,
                               not_found, status_body)
from simcluster.store import Entry, Store

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                  "characters, '-' or '.', and must start and end with an alphanumeric "
                  "character (e.g. 'example.com', regex used for validation is "
                  "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
TOPOLOGY_LABELS = ("topology.kubernetes.io/zone", "topology.kubernetes.io/region")


def pod_index(obj: dict) -> dict:
    """The pod fields a fieldSelector may name (values as strings, "" when unset)."""
    spec, status, meta = obj.get("spec") or {}, obj.get("status") or {}, obj["metadata"]
    return {"metadata.name": meta["name"], "metadata.namespace": meta.get("namespace", ""),
            "spec.nodeName": spec.get("nodeName", ""),
            "spec.schedulerName": spec.get("schedulerName", ""),
            "spec.restartPolicy": spec.get("restartPolicy", ""),
            "spec.serviceAccountName": spec.get("serviceAccountName", ""),
            "spec.hostNetwork": "true" if spec.get("hostNetwork") else "false",
            "status.phase": status.get("phase", ""), "status.podIP": status.get("podIP", ""),
            "status.nominatedNodeName": status.get("nominatedNodeName", "")}


def node_index(obj: dict) -> dict:
    return {"metadata.name": obj["metadata"]["name"],
            "spec.unschedulable": "true" if (obj.get("spec") or {}).get("unschedulable")
            else "false"}


def namespace_index(obj: dict) -> dict:
    return {"metadata.name": obj["metadata"]["name"],
            "status.phase": (obj.get("status") or {}).get("phase", "")}


def claim_index(obj: dict) -> dict:
    meta = obj["metadata"]
    return {"metadata.name": meta["name"], "metadata.namespace": meta.get("namespace", "")}


FIELD_SELECTABLE = {"pods": tuple(pod_index({"metadata": {"name": ""}})),
                    "nodes": tuple(node_index({"metadata": {"name": ""}})),
                    "namespaces": tuple(namespace_index({"metadata": {"name": ""}})),
                    "persistentvolumeclaims": tuple(claim_index({"metadata": {"name": ""}}))}


def rfc3339(t: float) -> str:
    return datetime.fromtimestamp(int(t), timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Api:
    """State changes with apiserver semantics on top of a Store."""

    def __init__(self, store: Store, clock=time.time, seed: int = 0):
        self.store = store
        self.clock = clock
        self._rng = random.Random(seed)  # uids and generateName suffixes
        store.register("pods", "Pod", True, pod_index)
        store.register("nodes", "Node", False, node_index)
        store.register("namespaces", "Namespace", False, namespace_index)
        store.register("persistentvolumeclaims", "PersistentVolumeClaim", True, claim_index)

    def now(self) -> str:
        return rfc3339(self.clock())

    def _uid(self) -> str:
        return str(uuid.UUID(int=self._rng.getrandbits(128), version=4))

    # -- reads -------------------------------------------------------------------------

    def get(self, resource: str, key: str) -> Entry:
        entry = self.store.get(resource, key)
        if entry is None:
            raise not_found(resource, key.rsplit("/", 1)[-1])
        return entry

    def read(self, resource: str, key: str) -> dict:
        """A private, mutable copy of a stored object (item form)."""
        return orjson.loads(self.get(resource, key).raw)

    # -- create ------------------------------------------------------------------------

    def create_namespace(self, body: dict, manager: str) -> Entry:
        name = (body.get("metadata") or {}).get("name", "")
        self._check_name("Namespace", name)
        now = self.now()
        labels = {**((body.get("metadata") or {}).get("labels") or {}),
                  "kubernetes.io/metadata.name": name}
        meta = {"name": name, "uid": self._uid(), "resourceVersion": "0",
                "creationTimestamp": now, "labels": dict(sorted(labels.items())),
                "managedFields": [managed_entry(manager, now, fields_v1(
                    {"metadata": {"labels": labels}}))]}
        obj = {"metadata": meta, "spec": {"finalizers": ["kubernetes"]},
               "status": {"phase": "Active"}}
        with self.store.lock:
            if self.store.get("namespaces", name):
                raise already_exists("namespaces", name)
            return self.store.put("namespaces", obj)

    def ensure_namespace(self, name: str) -> None:
        with self.store.lock:
            if self.store.get("namespaces", name) is None:
                self.create_namespace({"metadata": {"name": name}}, "simcluster")

    def create_pod(self, namespace: str, body: dict, manager: str) -> Entry:
        """POST a pod as a client would: server defaults and a fresh Pending status."""
        body = dict(body)
        meta = dict(body.get("metadata") or {})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + "".join(
                self._rng.choices("bcdfghjklmnpqrstvwxz2456789", k=5))
        body["metadata"] = meta
        self._validate_pod(meta.get("name", ""), body.get("spec") or {})
        if meta.get("namespace", namespace) != namespace:
            raise bad_request("the namespace of the provided object does not match the "
                              "namespace sent on the request")
        pod = new_pod(body, namespace=namespace, uid=self._uid(), resource_version="0",
                      now=self.now(), manager=manager,
                      priority=(body.get("spec") or {}).get("priority", 0))
        return self.insert("pods", pod)

    def create_claim(self, namespace: str, body: dict, manager: str) -> Entry:
        """POST a PersistentVolumeClaim (see defaults.new_claim)."""
        name = (body.get("metadata") or {}).get("name", "")
        self._check_name("PersistentVolumeClaim", name)
        if (body.get("metadata") or {}).get("namespace", namespace) != namespace:
            raise bad_request("the namespace of the provided object does not match the "
                              "namespace sent on the request")
        claim = new_claim(body, namespace=namespace, uid=self._uid(), resource_version="0",
                          now=self.now(), manager=manager)
        return self.insert("persistentvolumeclaims", claim)

    def delete_claim(self, namespace: str, name: str) -> Entry:
        """DELETE a claim: gone at once (no pvc-protection finalizer here: no pod mounts
        one), the DELETED state returned, as an unbound pod's delete returns it."""
        with self.store.lock:
            claim = self.read("persistentvolumeclaims", f"{namespace}/{name}")
            return self.store.remove("persistentvolumeclaims", claim)

    def insert(self, resource: str, obj: dict) -> Entry:
        """Store a complete object as new (409 AlreadyExists if its name is taken).
        Used directly by churn for pods a controller would have created."""
        meta = obj["metadata"]
        ns = meta.get("namespace")
        with self.store.lock:
            if ns is not None and self.store.get("namespaces", ns) is None:
                raise not_found("namespaces", ns)
            key = f"{ns}/{meta['name']}" if ns is not None else meta["name"]
            if self.store.get(resource, key) is not None:
                raise already_exists(resource, meta["name"])
            return self.store.put(resource, obj)

    def create_node(self, body: dict, manager: str) -> Entry:
        name = (body.get("metadata") or {}).get("name", "")
        self._check_name("Node", name)
        node = new_node(body, uid=self._uid(), resource_version="0", now=self.now(),
                        manager=manager)
        return self.insert("nodes", node)

    def _check_name(self, kind: str, name: str):
        if not name:
            raise invalid(kind, name, [("FieldValueRequired",
                                        "Required value: name or generateName is required",
                                        "metadata.name")])
        if len(name) > 253 or not _DNS_SUBDOMAIN.match(name):
            raise invalid(kind, name, [("FieldValueInvalid",
                                        f'Invalid value: "{name}": {_SUBDOMAIN_MSG}',
                                        "metadata.name")])

    def _validate_pod(self, name: str, spec: dict):
        causes = []
        if not name:
            causes.append(("FieldValueRequired", "Required value: name or generateName is "
                                                 "required", "metadata.name"))
        elif len(name) > 253 or not _DNS_SUBDOMAIN.match(name):
            causes.append(("FieldValueInvalid", f'Invalid value: "{name}": {_SUBDOMAIN_MSG}',
                           "metadata.name"))
        containers = spec.get("containers") or []
        if not containers:
            causes.append(("FieldValueRequired", "Required value", "spec.containers"))
        for i, c in enumerate(containers):
            if not c.get("name"):
                causes.append(("FieldValueRequired", "Required value",
                               f"spec.containers[{i}].name"))
            if not c.get("image"):
                causes.append(("FieldValueRequired", "Required value",
                               f"spec.containers[{i}].image"))
        policy = spec.get("restartPolicy")
        if policy is not None and policy not in ("Always", "OnFailure", "Never"):
            causes.append(("FieldValueNotSupported",
                           f'Unsupported value: "{policy}": supported values: "Always", '
                           '"OnFailure", "Never"', "spec.restartPolicy"))
        if causes:
            raise invalid("Pod", name, causes)

    # -- update and patch ----------------------------------------------------------------

    def update(self, resource: str, key: str, body: dict, manager: str,
               subresource: str | None = None) -> Entry:
        """PUT: compare-and-swap when the body carries a resourceVersion."""
        name = key.rsplit("/", 1)[-1]
        body_name = (body.get("metadata") or {}).get("name")
        if body_name != name:
            raise bad_request(f"the name of the object ({body_name}) does not match the name "
                              f"on the URL ({name})")
        return self._write(resource, key, lambda current: body, manager, subresource)

    def patch(self, resource: str, key: str, content_type: str, patch, manager: str,
              subresource: str | None = None) -> Entry:
        """PATCH: CAS only if the patch itself sets metadata.resourceVersion."""
        return self._write(resource, key,
                           lambda current: apply_patch(content_type, current, patch),
                           manager, subresource)

    def _write(self, resource, key, make_body, manager, subresource) -> Entry:
        with self.store.lock:
            entry = self.get(resource, key)
            current = self.store.resources[resource].full(entry.raw)
            body = make_body(orjson.loads(current))
            wanted_rv = (body.get("metadata") or {}).get("resourceVersion")
            if wanted_rv and wanted_rv != str(entry.rv):
                raise conflict(resource, key.rsplit("/", 1)[-1])
            old = orjson.loads(entry.raw)
            new = self._merge_write(resource, old, body, subresource)
            if new == old:
                return entry
            new["metadata"]["managedFields"] = track_update(
                old["metadata"].get("managedFields") or [], old, new, manager, self.now(),
                subresource)
            return self.store.put(resource, new)

    def _merge_write(self, resource, current: dict, body: dict, subresource) -> dict:
        """What a write of `body` changes (`current` is left as it is): only status for
        /status, never status otherwise; server-owned metadata is always kept."""
        new = dict(current)
        if subresource == "status":
            new["status"] = body.get("status") or {}
            return new
        meta = dict(body.get("metadata") or {})
        for k in ("name", "namespace", "uid", "resourceVersion", "generation",
                  "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                  "managedFields"):
            if k in current["metadata"]:
                meta[k] = current["metadata"][k]
            else:
                meta.pop(k, None)
        for k in ("labels", "annotations"):
            if meta.get(k):
                meta[k] = dict(sorted(meta[k].items()))
            else:
                meta.pop(k, None)
        new["metadata"] = ordered(meta, META_ORDER)
        if resource == "pods":
            spec = self._updated_pod_spec(current, default_pod_spec(body.get("spec") or {}))
            if spec != current["spec"]:
                new["metadata"]["generation"] = current["metadata"].get("generation", 1) + 1
            new["spec"] = spec
        elif resource == "nodes":
            new["spec"] = body.get("spec") or {}
        return new

    def _updated_pod_spec(self, old: dict, body_spec: dict) -> dict:
        """Pod specs are immutable but for images, activeDeadlineSeconds and added
        tolerations (422 otherwise, as in capture 84); keys the body leaves out stay."""
        current, name = old["spec"], old["metadata"]["name"]
        if "tolerations" in body_spec:
            before = current.get("tolerations") or []
            if (body_spec["tolerations"] or [])[:len(before)] != before:
                raise invalid("Pod", name, [(
                    "FieldValueForbidden", "Forbidden: existing toleration can not be "
                    "modified except its tolerationSeconds", "spec.tolerations")])
        for k, v in body_spec.items():
            if k in _MUTABLE_SPEC:
                continue
            if k in ("containers", "initContainers"):
                same = _without_images(v) == _without_images(current.get(k))
            else:
                same = v == current.get(k)
            if not same:
                raise invalid("Pod", name, [(
                    "FieldValueForbidden", "Forbidden: pod updates may not change fields "
                    "other than `spec.containers[*].image`,`spec.initContainers[*].image`,"
                    "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to "
                    "existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to "
                    "be set to 1 if it was previously negative)", "spec")])
        spec = dict(current)
        spec.update((k, body_spec[k]) for k in _MUTABLE_SPEC if k in body_spec)
        for k in ("containers", "initContainers"):
            if k in body_spec:
                spec[k] = [{**c, "image": n["image"]} for c, n in zip(current[k], body_spec[k])]
        return ordered(spec, POD_SPEC_ORDER)

    def set_status(self, namespace: str, name: str, change, manager: str = "kubelet") -> Entry:
        """Apply `change(status_dict)` to a pod's status (kubelet and churn writes)."""
        key = f"{namespace}/{name}"
        with self.store.lock:
            pod = self.read("pods", key)
            status = pod.get("status") or {}
            change(status)
            pod["status"] = ordered(status, POD_STATUS_ORDER)
            return self.update("pods", key, pod, manager, subresource="status")

    # -- binding -------------------------------------------------------------------------

    def bind(self, namespace: str, name: str, body: dict, *, copy_topology: bool = True):
        """pods/binding: one write setting nodeName, PodScheduled, the Binding's own
        annotations (merged, as the real server does), clearing nominatedNodeName, and
        (for the subresource, not the legacy /bindings) the node's zone and region labels."""
        if (body.get("metadata") or {}).get("name", name) != name:
            raise bad_request("name in URL does not match name in Binding object")
        node_name = (body.get("target") or {}).get("name", "")
        key = f"{namespace}/{name}"
        with self.store.lock:
            pod = self.read("pods", key)
            meta = pod["metadata"]
            spec = pod["spec"]
            if spec.get("nodeName"):
                raise ApiError(409, f'Operation cannot be fulfilled on pods/binding "{name}": '
                                    f'pod {name} is already assigned to node '
                                    f'"{spec["nodeName"]}"', "Conflict",
                               {"name": name, "kind": "pods/binding"})
            if meta.get("deletionTimestamp"):
                raise ApiError(409, f'Operation cannot be fulfilled on pods/binding "{name}": '
                                    f'pod {name} is being deleted, cannot be assigned to a host',
                               "Conflict", {"name": name, "kind": "pods/binding"})
            pod["spec"] = ordered({**spec, "nodeName": node_name}, POD_SPEC_ORDER)
            status = pod.get("status") or {}
            # A bound pod's nomination is over: the API server clears it with the Binding
            # (extender captures 03a, 03b: nominatedNodeName '' right after the bind).
            status.pop("nominatedNodeName", None)
            conditions = [c for c in status.get("conditions") or ()
                          if c.get("type") != "PodScheduled"]
            conditions.append({"type": "PodScheduled", "status": "True",
                               "lastProbeTime": None, "lastTransitionTime": self.now()})
            status["conditions"] = conditions
            pod["status"] = ordered(status, POD_STATUS_ORDER)
            annotations = (body.get("metadata") or {}).get("annotations")
            if annotations:
                meta["annotations"] = {**(meta.get("annotations") or {}), **annotations}
                pod["metadata"] = ordered(meta, META_ORDER)
            node = self.store.get("nodes", node_name)
            if copy_topology and node is not None:
                labels = dict(meta.get("labels") or {})
                labels.update((k, v) for k, v in node.labels.items() if k in TOPOLOGY_LABELS)
                meta["labels"] = dict(sorted(labels.items()))
                pod["metadata"] = ordered(meta, META_ORDER)
            self.store.put("pods", pod)

    # -- delete --------------------------------------------------------------------------

    def delete_pod(self, namespace: str, name: str, grace: int | None = None,
                   preconditions: dict | None = None) -> Entry:
        """Unbound (or grace 0) pods go at once: MODIFIED then DELETED, and the DELETED
        state is returned. Bound pods get deletionTimestamp = now + grace and stay."""
        key = f"{namespace}/{name}"
        with self.store.lock:
            entry = self.get("pods", key)
            pod = orjson.loads(entry.raw)
            self._check_preconditions(pod, entry, preconditions)
            meta = pod["metadata"]
            if grace is None:
                grace = pod["spec"].get("terminationGracePeriodSeconds", 30)
            if (not pod["spec"].get("nodeName")
                    or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")):
                grace = 0
            current = meta.get("deletionGracePeriodSeconds")
            if current is not None and grace >= current:
                return entry  # already terminating at least as fast
            now = self.clock()
            if "deletionTimestamp" not in meta:
                meta["generation"] = meta.get("generation", 1) + 1
            meta["deletionTimestamp"] = rfc3339(now + grace)
            meta["deletionGracePeriodSeconds"] = grace
            pod["metadata"] = ordered(meta, META_ORDER)
            modified = self.store.put("pods", pod)
            if grace > 0:
                return modified
            return self.store.remove("pods", orjson.loads(modified.raw))

    def delete_node(self, name: str, preconditions: dict | None = None) -> dict:
        with self.store.lock:
            entry = self.get("nodes", name)
            node = orjson.loads(entry.raw)
            self._check_preconditions(node, entry, preconditions)
            self.store.remove("nodes", node)
        return status_body(0, success=True, details={"name": name, "kind": "nodes",
                                                      "uid": node["metadata"]["uid"]})

    def _check_preconditions(self, obj, entry, preconditions):
        if not preconditions:
            return
        meta = obj["metadata"]
        kind = self.store.resources["pods" if "namespace" in meta else "nodes"].kind
        rv, uid = preconditions.get("resourceVersion"), preconditions.get("uid")
        if uid is not None and uid != meta.get("uid"):
            # The API server checks a delete's preconditions uid first, then resourceVersion,
            # in the same words (63f shows the resourceVersion's).
            raise ApiError(409, f'Operation cannot be fulfilled on {kind} "{meta["name"]}": '
                                f"the UID in the precondition ({uid}) does not match the UID "
                                f"in record ({meta.get('uid')}). The object might have been "
                                "deleted and then recreated", "Conflict",
                           {"name": meta["name"], "kind": kind})
        if rv is not None and rv != str(entry.rv):
            raise ApiError(409, f'Operation cannot be fulfilled on {kind} "{meta["name"]}": '
                                f"the ResourceVersion in the precondition ({rv}) does not match "
                                f"the ResourceVersion in record ({entry.rv}). The object might "
                                "have been modified", "Conflict",
                           {"name": meta["name"], "kind": kind})

    def delete_pods(self, keys: list, grace: int | None = None) -> None:
        """deletecollection: each pod as a single DELETE (gone ones are skipped)."""
        for key in keys:
            namespace, name = key.split("/", 1)
            try:
                self.delete_pod(namespace, name, grace)
            except ApiError as e:
                if e.code != 404:
                    raise


_MUTABLE_SPEC = ("tolerations", "activeDeadlineSeconds", "terminationGracePeriodSeconds")


def _without_images(containers):
    return [{k: v for k, v in c.items() if k != "image"} for c in containers or ()]
