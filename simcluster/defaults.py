"""What the apiserver adds to a pod, node or claim on create, in the order it writes keys.

Shared by the API server (POST defaults, capture 20) and the generator (which
builds objects as the server would have returned them).
"""

from simcluster.fields import fields_v1, managed_entry
from schedcache.quantity import parse_quantity

# Go struct field order, which the apiserver's JSON follows.
META_ORDER = ("name", "generateName", "namespace", "selfLink", "uid", "resourceVersion",
              "generation", "creationTimestamp", "deletionTimestamp",
              "deletionGracePeriodSeconds", "labels", "annotations", "ownerReferences",
              "finalizers", "managedFields")
POD_SPEC_ORDER = ("volumes", "initContainers", "containers", "ephemeralContainers",
                  "restartPolicy", "terminationGracePeriodSeconds", "activeDeadlineSeconds",
                  "dnsPolicy", "nodeSelector", "serviceAccountName", "serviceAccount",
                  "automountServiceAccountToken", "nodeName", "hostNetwork", "hostPID",
                  "hostIPC", "shareProcessNamespace", "securityContext", "imagePullSecrets",
                  "hostname", "subdomain", "affinity", "schedulerName", "tolerations",
                  "hostAliases", "priorityClassName", "priority", "dnsConfig",
                  "readinessGates", "runtimeClassName", "enableServiceLinks",
                  "preemptionPolicy", "overhead", "topologySpreadConstraints",
                  "setHostnameAsFQDN", "os", "hostUsers", "schedulingGates",
                  "resourceClaims", "resources")
CONTAINER_ORDER = ("name", "image", "command", "args", "workingDir", "ports", "envFrom", "env",
                   "resources", "resizePolicy", "restartPolicy", "volumeMounts",
                   "volumeDevices", "livenessProbe", "readinessProbe", "startupProbe",
                   "lifecycle", "terminationMessagePath", "terminationMessagePolicy",
                   "imagePullPolicy", "securityContext", "stdin", "stdinOnce", "tty")
PORT_ORDER = ("name", "hostPort", "containerPort", "protocol", "hostIP")
POD_STATUS_ORDER = ("observedGeneration", "phase", "conditions", "message", "reason",
                    "nominatedNodeName", "hostIP", "hostIPs", "podIP", "podIPs", "startTime",
                    "initContainerStatuses", "containerStatuses", "qosClass")
NODE_STATUS_ORDER = ("capacity", "allocatable", "phase", "conditions", "addresses",
                     "daemonEndpoints", "nodeInfo", "images", "volumesInUse",
                     "volumesAttached", "config", "runtimeHandlers", "features")

# Appended by the DefaultTolerationSeconds admission plugin after the user's own.
DEFAULT_TOLERATIONS = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
     "tolerationSeconds": 300},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
     "tolerationSeconds": 300},
)
EMPTY_NODE_INFO = {"machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": "",
                   "osImage": "", "containerRuntimeVersion": "", "kubeletVersion": "",
                   "kubeProxyVersion": "", "operatingSystem": "", "architecture": ""}


def ordered(d: dict, order: tuple) -> dict:
    """`d` with known keys in `order` first, unknown keys after, as Go would emit them."""
    out = {k: d[k] for k in order if k in d}
    if len(out) != len(d):
        out.update((k, v) for k, v in d.items() if k not in out)
    return out


def sorted_maps(d: dict, keys: tuple) -> dict:
    """Go writes map[string]... keys sorted; `d` with those map-valued keys sorted."""
    return {k: dict(sorted(v.items())) if k in keys and isinstance(v, dict) else v
            for k, v in d.items()}


def default_container(c: dict) -> dict:
    c = dict(c)
    image = c.get("image", "")
    tagged = ":" in image.rsplit("/", 1)[-1] or "@" in image
    c.setdefault("resources", {})
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    c.setdefault("imagePullPolicy",
                 "IfNotPresent" if tagged and not image.endswith(":latest") else "Always")
    if "ports" in c:
        c["ports"] = [ordered({"protocol": "TCP", **p}, PORT_ORDER) for p in c["ports"]]
    if "resources" in c:
        r = c["resources"]
        c["resources"] = ordered(sorted_maps(r, ("limits", "requests")),
                                 ("limits", "requests", "claims"))
    return ordered(c, CONTAINER_ORDER)


def default_pod_spec(spec: dict) -> dict:
    """Defaults from the API types (what the creator's managedFields also list)."""
    spec = sorted_maps(spec, ("nodeSelector", "overhead"))
    for key in ("initContainers", "containers"):
        if key in spec:
            spec[key] = [default_container(c) for c in spec[key]]
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("enableServiceLinks", True)
    if spec.get("hostNetwork"):
        for c in spec.get("containers", ()):
            for p in c.get("ports", ()):
                p.setdefault("hostPort", p["containerPort"])
    return ordered(spec, POD_SPEC_ORDER)


def admit_pod_spec(spec: dict, priority: int = 0) -> dict:
    """Fields added by admission plugins (not listed in the creator's managedFields)."""
    spec = dict(spec)
    spec["tolerations"] = [*spec.get("tolerations", ()), *_missing_default_tolerations(spec)]
    spec.setdefault("priority", priority)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    return ordered(spec, POD_SPEC_ORDER)


def _missing_default_tolerations(spec):
    have = {(t.get("key"), t.get("effect")) for t in spec.get("tolerations", ())}
    return [dict(t) for t in DEFAULT_TOLERATIONS if (t["key"], t["effect"]) not in have
            and (None, "NoExecute") not in have and (None, None) not in have]


def qos_class(spec: dict) -> str:
    """Guaranteed / Burstable / BestEffort from the containers' cpu and memory."""
    containers = [*spec.get("initContainers", ()), *spec.get("containers", ())]
    requests_seen = False
    guaranteed = True
    for c in containers:
        res = c.get("resources") or {}
        limits, requests = res.get("limits") or {}, res.get("requests") or {}
        for name in ("cpu", "memory"):
            req, lim = requests.get(name, limits.get(name)), limits.get(name)
            if req is not None and parse_quantity(req) != 0:
                requests_seen = True
            if lim is not None and parse_quantity(lim) != 0:
                requests_seen = True
            if lim is None or req is None or parse_quantity(req) != parse_quantity(lim):
                guaranteed = False
    if not requests_seen:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _user_meta(body: dict) -> dict:
    """The metadata a client may set on create; server-owned fields are dropped."""
    meta = {k: v for k, v in (body.get("metadata") or {}).items()
            if k not in ("uid", "resourceVersion", "generation", "creationTimestamp",
                         "managedFields", "deletionTimestamp", "deletionGracePeriodSeconds",
                         "selfLink")}
    return sorted_maps(meta, ("labels", "annotations"))


def new_pod(body: dict, *, namespace: str, uid: str, resource_version: str, now: str,
            manager: str, priority: int = 0) -> dict:
    """A Pod as a POST returns it: defaults, managedFields, admission, fresh status."""
    meta = _user_meta(body)
    spec = default_pod_spec(body.get("spec") or {})
    user_meta = {k: v for k, v in meta.items() if k not in ("name", "namespace")}
    tracked = {"metadata": user_meta, "spec": spec} if user_meta else {"spec": spec}
    managed = [managed_entry(manager, now, fields_v1(tracked))]
    spec = admit_pod_spec(spec, priority)
    meta.update(namespace=namespace, uid=uid, resourceVersion=resource_version,
                generation=1, creationTimestamp=now, managedFields=managed)
    return {"kind": "Pod", "apiVersion": "v1", "metadata": ordered(meta, META_ORDER),
            "spec": spec, "status": {"phase": "Pending", "qosClass": qos_class(spec)}}


def new_node(body: dict, *, uid: str, resource_version: str, now: str, manager: str) -> dict:
    """A Node as a POST returns it: status kept (kubelet registration), defaults added."""
    meta = _user_meta(body)
    spec = dict(body.get("spec") or {})
    user_meta = {k: v for k, v in meta.items() if k != "name"}
    tracked = {}
    if user_meta:
        tracked["metadata"] = user_meta
    if spec:
        tracked["spec"] = spec
    meta.update(uid=uid, resourceVersion=resource_version, creationTimestamp=now,
                managedFields=[managed_entry(manager, now, fields_v1(tracked))])
    status = sorted_maps(body.get("status") or {}, ("capacity", "allocatable"))
    status.setdefault("daemonEndpoints", {"kubeletEndpoint": {"Port": 0}})
    status.setdefault("nodeInfo", dict(EMPTY_NODE_INFO))
    return {"kind": "Node", "apiVersion": "v1", "metadata": ordered(meta, META_ORDER),
            "spec": spec, "status": ordered(status, NODE_STATUS_ORDER)}


def new_claim(body: dict, *, namespace: str, uid: str, resource_version: str, now: str,
              manager: str) -> dict:
    """A PersistentVolumeClaim as a POST returns it: spec as sent (volumeMode defaulted to
    Filesystem), status dropped for a fresh `Pending` (a subresource, as a pod's), the
    pod's metadata rules. No PersistentVolume controller runs here, so it stays Pending:
    only its existence counts (kube-scheduler's VolumeBinding PreFilter, shared
    k8s-wire/why-pending missing-pvc)."""
    meta = _user_meta(body)
    spec = {"volumeMode": "Filesystem", **(body.get("spec") or {})}
    user_meta = {k: v for k, v in meta.items() if k not in ("name", "namespace")}
    tracked = {"metadata": user_meta, "spec": spec} if user_meta else {"spec": spec}
    meta.update(namespace=namespace, uid=uid, resourceVersion=resource_version,
                creationTimestamp=now, managedFields=[managed_entry(manager, now,
                                                                    fields_v1(tracked))])
    return {"kind": "PersistentVolumeClaim", "apiVersion": "v1",
            "metadata": ordered(meta, META_ORDER), "spec": spec,
            "status": {"phase": "Pending"}}
