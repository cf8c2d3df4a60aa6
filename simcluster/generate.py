"""A deterministic, realistic cluster: Node and Pod objects as a live apiserver lists them.

Pods are stamped out of a few hundred spec variants and per-workload templates
(Deployments, StatefulSets, DaemonSets), so 150,000 pods take seconds: pods share
read-only sub-objects (container specs, managedFields, conditions, labels).
Copy a pod (`copy.deepcopy` or an orjson round trip) before mutating it.

No clock is read: every timestamp derives from BASE_TIME and the seed.
"""

import hashlib
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from itertools import accumulate

from simcluster.defaults import (EMPTY_NODE_INFO, POD_SPEC_ORDER, admit_pod_spec,
                                 default_pod_spec, ordered, qos_class)
from simcluster.fields import fields_v1, managed_entry
from simcluster.gcpause import gc_paused
from schedcache.quantity import milli_value as milli, parse_quantity

BASE_TIME = datetime(2026, 11, 1, tzinfo=timezone.utc)
ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
GPU = "nvidia.com/gpu"
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # the alphabet of generated name suffixes
_KUBELET_VERSION = "v1.36.2"

# (instance type, cpu cores, memory GiB, gpus, share of nodes, pool). The gpu and
# infra pools are tainted; their share matches the share of shapes that need them.
_INSTANCE_TYPES = (
    ("m6i.4xlarge", 16, 64, 0, 0.34, "general"),
    ("m6i.8xlarge", 32, 128, 0, 0.34, "general"),
    ("r6i.8xlarge", 32, 256, 0, 0.12, "general"),
    ("c6i.16xlarge", 64, 128, 0, 0.10, "general"),
    ("p4d.24xlarge", 96, 1152, 8, 0.05, "gpu"),
    ("m6i.4xlarge", 16, 64, 0, 0.05, "infra"),
)
_PRIORITY_CLASSES = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000,
                     "high-priority": 1000000, "batch-low": -10}
_CPU_REQUESTS = ("10m", "50m", "100m", "100m", "100m", "200m", "250m", "250m", "500m", "0.5",
                 "1", "2")
_MEM_REQUESTS = ("32Mi", "64Mi", "128Mi", "256Mi", "512Mi", "512Mi", "1G", "1Gi", "2Gi",
                 "268435456")
_WORDS = ("api", "web", "cart", "auth", "search", "billing", "ingest", "metrics", "cache",
          "queue", "orders", "users", "media", "notify", "report", "gateway", "ledger",
          "stream", "router", "feed", "inventory", "pricing", "catalog", "session")
_SERVICE_ACCOUNT_PROJECTION = {
    "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt",
                       "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
            "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
    ],
    "defaultMode": 420,
}
_DAEMONSET_TOLERATIONS = [
    {"operator": "Exists"},
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
]


def ts(t: datetime) -> str:
    """RFC 3339 in UTC, seconds precision, as metav1.Time is written."""
    return t.isoformat(timespec="seconds")[:19] + "Z"


def uid_from(bits: int) -> str:
    h = f"{bits:032x}"
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{h[16:20]}-{h[20:32]}"


def _stable(text: str, bits: int) -> int:
    """A number derived from `text` alone (str hash() is salted per process)."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=16).digest()) % 2**bits


_PAIRS = [a + b for a in _NAME_CHARS for b in _NAME_CHARS]


def _suffix(rng: random.Random, n: int) -> str:
    """n (5 or 10) random name characters, like generateName suffixes and template hashes."""
    out = ""
    for _ in range(n // 5):
        i = rng.getrandbits(24) % 27**5
        out += _PAIRS[i // 19683] + _PAIRS[i // 27 % 729] + _NAME_CHARS[i % 27]
    return out


@dataclass
class Cluster:
    nodes: list = field(default_factory=list)
    pods: list = field(default_factory=list)
    resource_version: int = 0  # the newest resourceVersion used

    def next_rv(self) -> str:
        self.resource_version += 1
        return str(self.resource_version)


# ----------------------------------------------------------------------------- images

@dataclass(frozen=True)
class Image:
    repo: str
    tag: str
    digest: str
    size: int
    ref: str = field(default="", compare=False)              # repo:tag
    status_entry: dict = field(default=None, compare=False)  # node status.images item, shared

    def __post_init__(self):
        object.__setattr__(self, "ref", f"{self.repo}:{self.tag}")
        object.__setattr__(self, "status_entry", {
            "names": [f"{self.repo}@sha256:{self.digest}", self.ref], "sizeBytes": self.size})


def _image_pool(rng: random.Random, count: int = 240) -> list:
    registries = ("docker.io/library", "registry.k8s.io", "quay.io/prometheus",
                  "ghcr.io/acme", "123456789012.dkr.ecr.us-east-1.amazonaws.com/acme")
    pool = [Image("registry.k8s.io/pause", "3.10", f"{rng.getrandbits(256):064x}", 320368),
            Image("registry.k8s.io/kube-proxy", _KUBELET_VERSION,
                  f"{rng.getrandbits(256):064x}", 30_021_339),
            Image("quay.io/prometheus/node-exporter", "v1.9.1",
                  f"{rng.getrandbits(256):064x}", 12_503_107),
            Image("cr.fluentbit.io/fluent/fluent-bit", "4.0.3",
                  f"{rng.getrandbits(256):064x}", 39_481_774),
            Image("nvcr.io/nvidia/k8s-device-plugin", "v0.17.2",
                  f"{rng.getrandbits(256):064x}", 152_384_219)]
    while len(pool) < count:
        i = len(pool)
        repo = f"{registries[i % len(registries)]}/{_WORDS[i % len(_WORDS)]}-{i}"
        tag = f"v{rng.randint(0, 4)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}"
        pool.append(Image(repo, tag, f"{rng.getrandbits(256):064x}",
                          rng.randint(5_000_000, 1_500_000_000)))
    return pool


# ----------------------------------------------------------------------------- nodes

def _node_addresses(name: str, ip: str) -> list:
    return [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}]


def make_node(name: str, *, zone: str = "zone-a", region: str = "region-1", cpu: str = "32",
              memory: str = "128Gi", pods: str = "110", ephemeral_storage: str = "200Gi",
              gpus: int = 0, allocatable: dict | None = None, images: list | None = None,
              labels: dict | None = None, taints: list | None = None,
              instance_type: str = "m6i.8xlarge", internal_ip: str = "10.0.0.1",
              pod_cidr: str = "10.1.0.0/24", uid: str | None = None,
              resource_version: str = "1", created: datetime = BASE_TIME) -> dict:
    """A Node as a live cluster returns it (kubelet registered, Ready, images pulled).

    `images` is a list of status entries ({"names": [...], "sizeBytes": n}).
    Allocatable defaults to capacity minus typical kubelet reservations.
    """
    capacity = {"cpu": cpu, "ephemeral-storage": ephemeral_storage, "hugepages-1Gi": "0",
                "hugepages-2Mi": "0", "memory": memory, "pods": pods}
    if gpus:
        capacity[GPU] = str(gpus)
    if allocatable is None:
        allocatable = dict(capacity)
        allocatable["cpu"] = f"{milli(cpu) - 150 if milli(cpu) > 1000 else milli(cpu)}m"
        allocatable["memory"] = f"{int(parse_quantity(memory) * 98 // 100) // 1024}Ki"
        allocatable["ephemeral-storage"] = str(int(parse_quantity(ephemeral_storage) * 9 // 10))
    node_labels = {
        "beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/instance-type": instance_type,
        "beta.kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": instance_type, REGION_LABEL: region, ZONE_LABEL: zone,
    }
    node_labels.update(labels or {})
    created_s = ts(created)
    heartbeat = ts(created + timedelta(days=20))
    spec = {"podCIDR": pod_cidr, "podCIDRs": [pod_cidr],
            "providerID": f"aws:///{zone}/i-{_stable(name, 68):017x}"}
    if taints:
        spec["taints"] = taints
    meta = {"name": name, "uid": uid or uid_from(_stable(name, 128)),
            "resourceVersion": resource_version, "creationTimestamp": created_s,
            "labels": dict(sorted(node_labels.items())),
            "annotations": {"node.alpha.kubernetes.io/ttl": "0",
                            "volumes.kubernetes.io/controller-managed-attach-detach": "true"}}
    conditions = [
        _node_condition("MemoryPressure", "False", "KubeletHasSufficientMemory",
                        "kubelet has sufficient memory available", heartbeat, created_s),
        _node_condition("DiskPressure", "False", "KubeletHasNoDiskPressure",
                        "kubelet has no disk pressure", heartbeat, created_s),
        _node_condition("PIDPressure", "False", "KubeletHasSufficientPID",
                        "kubelet has sufficient PID available", heartbeat, created_s),
        _node_condition("Ready", "True", "KubeletReady", "kubelet is posting ready status",
                        heartbeat, ts(created + timedelta(seconds=12))),
    ]
    status = {
        "capacity": capacity, "allocatable": dict(sorted(allocatable.items())),
        "conditions": conditions, "addresses": _node_addresses(name, internal_ip),
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {**EMPTY_NODE_INFO, "machineID": f"{_stable(name + '/machine', 128):032x}",
                     "systemUUID": meta["uid"], "bootID": meta["uid"],
                     "kernelVersion": "6.1.141-155.222.amzn2023.x86_64",
                     "osImage": "Amazon Linux 2023.8.20250715",
                     "containerRuntimeVersion": "containerd://2.0.5",
                     "kubeletVersion": _KUBELET_VERSION, "kubeProxyVersion": "",
                     "operatingSystem": "linux", "architecture": "amd64"},
        "images": images or [],
    }
    meta["managedFields"] = [
        managed_entry("kubelet", created_s, _node_meta_fields(tuple(meta["labels"]))),
        managed_entry("kube-controller-manager", created_s, fields_v1({"spec": {
            k: spec[k] for k in ("podCIDR", "podCIDRs")}})),
        managed_entry("kubelet", heartbeat, fields_v1({"status": {
            "conditions": conditions, "images": [], "nodeInfo": {}}}), subresource="status"),
    ]
    return {"kind": "Node", "apiVersion": "v1", "metadata": meta, "spec": spec,
            "status": status}


@lru_cache(maxsize=64)
def _node_meta_fields(label_keys: tuple) -> dict:
    """The kubelet's metadata fields depend only on which labels it set (shared, read-only)."""
    return fields_v1({"metadata": {"labels": dict.fromkeys(label_keys, ""), "annotations": {
        "node.alpha.kubernetes.io/ttl": "",
        "volumes.kubernetes.io/controller-managed-attach-detach": ""}}})


def _node_condition(kind, status, reason, message, heartbeat, transition):
    return {"type": kind, "status": status, "lastHeartbeatTime": heartbeat,
            "lastTransitionTime": transition, "reason": reason, "message": message}


# ----------------------------------------------------------------------------- pod templates
# ----------------------------------------------------------------------------- pod shapes
#
# Three levels, from shared to per pod:
#   _Shape     a pod spec variant (containers, resources, init/sidecars, overhead,
#              tolerations, priority...), its controller managedFields and scheduling
#              needs; a library of a few hundred is drawn once per cluster;
#   _Workload  one Deployment/StatefulSet/DaemonSet: namespace, names, labels,
#              owner, times, affinity selectors;
#   _stamp     one pod: name, uid, rv, SA volume, node, IPs, container IDs.

@dataclass
class _Shape:
    spec: dict            # defaulted and admitted; no SA, nodeName or per-workload affinity
    spec_fields: dict     # "f:spec" of the creating controller
    qos: str
    cpu_m: int            # what the scheduler counts: containers + sidecars, max init, overhead
    mem: int
    gpus: int
    pool: str = "general"  # node pool: "general", "gpu", "infra" or "daemon" (every node)
    affinity: str = ""     # "", "spread" (required anti), "anti" (preferred), "together"
    zone_pinned: bool = False
    statefulset: bool = False
    host_ports: tuple = ()  # (protocol, port) pairs a node can host once


def _container(name: str, image: Image, requests: dict | None, limits: dict | None,
               **extra) -> dict:
    c = {"name": name, "image": image.ref, **extra}
    if requests or limits:
        c["resources"] = {k: v for k, v in (("limits", limits), ("requests", requests)) if v}
    return c


def _effective_requests(spec: dict) -> tuple:
    def req(c, name):
        res = c.get("resources") or {}
        q = (res.get("requests") or {}).get(name, (res.get("limits") or {}).get(name))
        return 0 if q is None else (milli(q) if name == "cpu" else int(parse_quantity(q)))
    totals = []
    for name in ("cpu", "memory", GPU):
        total = sum(req(c, name) for c in spec["containers"])
        sidecars = 0
        for c in spec.get("initContainers", ()):
            if c.get("restartPolicy") == "Always":
                sidecars += req(c, name)
            else:
                total = max(total, sidecars + req(c, name))
        totals.append(total + sidecars + req({"resources": {"requests": spec.get("overhead")
                                                                     or {}}}, name))
    return tuple(totals)


def _affinity(kind: str, app: str, zone: str | None) -> dict:
    affinity = {}
    if zone:
        affinity["nodeAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": ZONE_LABEL, "operator": "In", "values": [zone]}]}]}}
    if kind == "spread":
        affinity["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": app}},
             "topologyKey": "kubernetes.io/hostname"}]}
    elif kind == "anti":
        affinity["podAntiAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "podAffinityTerm": {
                "labelSelector": {"matchExpressions": [
                    {"key": "app", "operator": "In", "values": [app]}]},
                "topologyKey": "kubernetes.io/hostname"}}]}
    elif kind == "together":
        affinity["podAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 50, "podAffinityTerm": {
                "labelSelector": {"matchLabels": {"tier": "data"}},
                "topologyKey": ZONE_LABEL}}]}
    return affinity


def _make_shape(spec: dict, *, priority_class: str | None = None, pool: str = "general",
                affinity: str = "", zone_pinned: bool = False,
                statefulset: bool = False) -> _Shape:
    spec = default_pod_spec(spec)
    if priority_class:
        spec["priorityClassName"] = priority_class
    # The controller also set these per workload / per pod; their field sets do not
    # depend on the values, so placeholders give the right managedFields.
    tracked = {**spec, "serviceAccountName": "-"}
    if statefulset:
        tracked.update(volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "-"}}],
                       hostname="-", subdomain="-")
    placeholder_affinity = _affinity(affinity, "-", "-" if zone_pinned else None)
    if placeholder_affinity:
        tracked["affinity"] = placeholder_affinity
    spec_fields = fields_v1({"spec": tracked})["f:spec"]
    spec = admit_pod_spec(spec, _PRIORITY_CLASSES.get(priority_class, 0))
    cpu_m, mem, gpus = _effective_requests(spec)
    host_ports = tuple((p["protocol"], p["hostPort"]) for key in ("initContainers", "containers")
                       for c in spec.get(key, ()) for p in c.get("ports", ()) if "hostPort" in p)
    return _Shape(spec, spec_fields, qos_class(spec), cpu_m, mem, gpus, pool, affinity,
                  zone_pinned, statefulset, host_ports)


class _ShapeLibrary:
    """Draws the cluster's pod spec variants with the feature mix of a busy cluster."""

    def __init__(self, rng: random.Random, pool: list):
        self.rng = rng
        self.app_images = pool[5:]
        self.cum_weights = list(accumulate(1.0 / (i + 1) ** 0.8
                                           for i in range(len(self.app_images))))

    def image(self) -> Image:
        return self.rng.choices(self.app_images, cum_weights=self.cum_weights)[0]

    def _resources(self, main: bool, gpus: int) -> tuple:
        rng = self.rng
        cpu = rng.choice(_CPU_REQUESTS if main else _CPU_REQUESTS[:4])
        requests = {"cpu": cpu, "memory": rng.choice(_MEM_REQUESTS if main
                                                     else _MEM_REQUESTS[:4])}
        if rng.random() < 0.15:
            requests["ephemeral-storage"] = rng.choice(("1Gi", "2Gi", "500Mi", "10G"))
        if gpus:
            requests[GPU] = str(gpus)
        style = rng.random()
        if style < 0.2:
            limits = {k: v for k, v in requests.items() if k in ("cpu", "memory")}
        elif style < 0.6:
            limits = {"memory": requests["memory"]}
        elif style < 0.8:
            limits = {"cpu": rng.choice(("1", "2", "4")), "memory": rng.choice(("1Gi", "4Gi"))}
        else:
            limits = {}
        if gpus:
            limits[GPU] = str(gpus)
        return requests, limits

    def draw(self, statefulset: bool, pool: str, host_port: str = "") -> _Shape:
        """One shape; `host_port` "any" or "ip" adds a hostPort (bound to all addresses
        or to one hostIP)."""
        rng = self.rng
        gpus = rng.choice((1, 1, 2)) if pool == "gpu" else 0
        best_effort = pool == "general" and rng.random() < 0.03
        containers = []
        for i in range(rng.choices((1, 2, 3), (0.6, 0.3, 0.1))[0]):
            requests, limits = ((None, None) if best_effort
                                else self._resources(i == 0, gpus if i == 0 else 0))
            extra = {}
            if i == 0:
                extra["ports"] = [{"name": "http", "containerPort": 8080}]
                if host_port:
                    port = {"name": "hostport", "containerPort": 9000 + rng.randint(0, 50),
                            "hostPort": 9000 + rng.randint(0, 50)}
                    if host_port == "ip":
                        port["hostIP"] = rng.choice(("0.0.0.0", "127.0.0.1"))
                    extra["ports"].append(port)
                if statefulset:
                    extra["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
            name = rng.choice(("app", "server", "main", "worker")) if i == 0 else f"sidecar-{i}"
            containers.append(_container(name, self.image(), requests, limits, **extra))
        spec = {"containers": containers}
        if rng.random() < 0.2:
            resources = (None, None) if best_effort else ({"cpu": "10m", "memory": "16Mi"}, None)
            if rng.random() < 0.25:  # a native sidecar: runs beside the app containers
                init = _container("proxy", self.image(), *resources, restartPolicy="Always")
            else:
                init = _container("init", self.image(), *resources, command=["sh", "-c", "true"])
            spec["initContainers"] = [init]
        if rng.random() < 0.03 and not best_effort:
            spec["runtimeClassName"] = "kata"
            spec["overhead"] = {"cpu": "250m", "memory": "160Mi"}
        if pool == "gpu":
            spec["tolerations"] = [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}]
            spec["nodeSelector"] = {"nvidia.com/gpu.present": "true"}
        elif pool == "infra":
            spec["tolerations"] = [{"key": "dedicated", "operator": "Equal", "value": "infra",
                                    "effect": "NoSchedule"}]
            spec["nodeSelector"] = {"node-pool": "infra"}
        elif rng.random() < 0.1:
            spec["nodeSelector"] = {"kubernetes.io/os": "linux"}
        roll = rng.random()
        affinity = ("spread" if roll < 0.03 and pool == "general" else "anti" if roll < 0.13
                    else "together" if roll < 0.16 else "")
        priority_class = rng.choices((None, "high-priority", "batch-low",
                                      "system-cluster-critical"), (0.8, 0.1, 0.08, 0.02))[0]
        return _make_shape(spec, priority_class=priority_class, pool=pool, affinity=affinity,
                           zone_pinned=rng.random() < 0.03, statefulset=statefulset)


# ----------------------------------------------------------------------------- workloads

@dataclass
class _Workload:
    shape: _Shape
    namespace: str
    base_name: str            # generateName, or the StatefulSet name + "-"
    labels: dict
    owner: list | None
    created: datetime
    created_s: str
    spec_head: dict           # the pod spec keys that come before nodeName ...
    spec_tail: dict           # ... and after it (Go field order)
    creator: dict             # the controller's managedFields entry
    images: tuple             # the app containers' images (a node running it has them)
    zone: str | None = None   # required node affinity to this zone
    by_zone: dict = field(default_factory=dict)   # zone -> labels with topology copied
    running: dict | None = None                   # shared kubelet status pieces


def _workload(shape: _Shape, *, namespace: str, base_name: str, labels: dict,
              owner: list | None, created: datetime, service_account: str = "default",
              token_volume: str, app: str = "", zone: str | None = None,
              manager: str = "kube-controller-manager") -> _Workload:
    """A workload; `token_volume` names its kube-api-access volume (ServiceAccount
    admission draws one per pod; one per workload keeps stamping cheap)."""
    labels = dict(sorted(labels.items()))
    meta = {"labels": labels}
    if owner:
        meta.update(generateName=base_name, ownerReferences=owner)
    meta_fields = fields_v1({"metadata": meta}) if labels or owner else {}
    creator = managed_entry(manager, ts(created), {**meta_fields, "f:spec": shape.spec_fields})
    spec = dict(shape.spec)
    mount = {"name": token_volume, "readOnly": True,
             "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}
    for key in ("initContainers", "containers"):
        if key in spec:
            spec[key] = [{**c, "volumeMounts": [*c.get("volumeMounts", ()), mount]}
                         for c in spec[key]]
    spec["volumes"] = [*spec.get("volumes", ()),
                       {"name": token_volume, "projected": _SERVICE_ACCOUNT_PROJECTION}]
    spec.update(serviceAccountName=service_account, serviceAccount=service_account,
                nodeName="")
    if shape.statefulset:
        spec.update(hostname="", subdomain=base_name[:-1])
    affinity = _affinity(shape.affinity, app, zone)
    if affinity or shape.pool == "daemon":
        spec["affinity"] = affinity
    keys = list(ordered(spec, POD_SPEC_ORDER))
    cut = keys.index("nodeName")
    return _Workload(shape, namespace, base_name, labels, owner, created, ts(created),
                     {k: spec[k] for k in keys[:cut]}, {k: spec[k] for k in keys[cut + 1:]},
                     creator, tuple(c["image"] for c in spec["containers"]), zone)


def _labels_in(w: _Workload, zone: str, region: str) -> dict:
    """Pod labels after binding: pods/binding copies the node's zone and region."""
    labels = w.by_zone.get(zone)
    if labels is None:
        labels = dict(sorted({**w.labels, ZONE_LABEL: zone, REGION_LABEL: region}.items()))
        w.by_zone[zone] = labels
    return labels


_KUBELET_FIELDS = {}  # has init containers -> (fields before "f:podIPs", fields after)


def _kubelet_fields(has_init: bool) -> tuple:
    if has_init not in _KUBELET_FIELDS:
        status = {"conditions": [{"type": t, "status": "", "lastProbeTime": None,
                                  "lastTransitionTime": ""} for t in _CONDITIONS],
                  "containerStatuses": [], "hostIP": "", "hostIPs": [], "phase": "",
                  "podIP": "", "startTime": ""}
        if has_init:
            status["initContainerStatuses"] = []
        fields = fields_v1({"status": status})["f:status"]
        _KUBELET_FIELDS[has_init] = ({k: v for k, v in fields.items() if k < "f:podIPs"},
                                     {k: v for k, v in fields.items() if k > "f:podIPs"})
    return _KUBELET_FIELDS[has_init]


_CONDITIONS = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
               "PodScheduled")


def _conditions(scheduled: str, ready: str) -> list:
    return [{"type": t, "status": "True", "lastProbeTime": None,
             "lastTransitionTime": scheduled if t == "PodScheduled" else ready}
            for t in _CONDITIONS]


def _container_statuses(containers, init: bool, start: str, ready: str) -> list:
    """Status templates (containerID/imageID still unset) once everything runs: init
    containers completed, sidecars and app containers running."""
    out = []
    for c in containers:
        runs = not init or c.get("restartPolicy") == "Always"
        state = ({"running": {"startedAt": ready}} if runs else
                 {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": start,
                                 "finishedAt": start, "containerID": None}})
        out.append({"name": c["name"], "state": state, "lastState": {}, "ready": runs,
                    "restartCount": 0, "image": c["image"], "imageID": "",
                    "containerID": None, "started": runs})
    return out


def _running_parts(w: _Workload) -> dict:
    """Conditions and container status templates every running replica shares."""
    if w.running is None:
        scheduled, start, ready = (ts(w.created + timedelta(seconds=s)) for s in (0, 2, 9))
        init = _container_statuses(w.spec_head.get("initContainers", ()), True, start, ready)
        w.running = {"conditions": _conditions(scheduled, ready), "start": start,
                     "ready": ready, "init": init,
                     "main": _container_statuses(w.spec_head["containers"], False, start,
                                                 ready),
                     "kubelet": _kubelet_fields(bool(init))}
    return w.running


def running_status(pod: dict, host_ip: str, pod_ip: str, started: datetime,
                   rng: random.Random) -> dict:
    """The status a kubelet reports once `pod` (bound, Pending) has all containers up."""
    spec, status = pod["spec"], pod.get("status") or {}
    scheduled = next((c["lastTransitionTime"] for c in status.get("conditions") or ()
                      if c.get("type") == "PodScheduled"), ts(started))
    start, ready = ts(started), ts(started + timedelta(seconds=1))
    if spec.get("hostNetwork"):
        pod_ip = host_ip
    stamper = _Stamper(rng, Cluster(), {})
    out = {"phase": "Running", "conditions": _conditions(scheduled, ready), "hostIP": host_ip,
           "hostIPs": [{"ip": host_ip}], "podIP": pod_ip, "podIPs": [{"ip": pod_ip}],
           "startTime": start}
    init = _container_statuses(spec.get("initContainers", ()), True, start, ready)
    if init:
        out["initContainerStatuses"] = [stamper.started(s) for s in init]
    out["containerStatuses"] = [stamper.started(s) for s in _container_statuses(
        spec["containers"], False, start, ready)]
    out["qosClass"] = status.get("qosClass", "BestEffort")
    return out


class _Stamper:
    """Turns a workload plus (name, node) into a full pod dict."""

    def __init__(self, rng: random.Random, cluster: Cluster, images: dict):
        self.rng = rng
        self.cluster = cluster
        self.images = images  # image ref -> Image

    def stamp(self, w: _Workload, name: str, node: dict | None, pod_ip: str = "") -> dict:
        shape = w.shape
        meta = {"name": name}
        if w.owner:
            meta["generateName"] = w.base_name
        meta.update(namespace=w.namespace, uid=uid_from(self.rng.getrandbits(128)),
                    resourceVersion=self.cluster.next_rv(), generation=1,
                    creationTimestamp=w.created_s, labels=w.labels)
        if w.owner:
            meta["ownerReferences"] = w.owner
        head, tail = w.spec_head, w.spec_tail
        if shape.statefulset:
            volumes = [{"name": "data", "persistentVolumeClaim": {"claimName": f"data-{name}"}},
                       *head["volumes"]]
            head = {**head, "volumes": volumes}
            tail = {**tail, "hostname": name}
        if node is None:
            meta["managedFields"] = [w.creator]
            return {"metadata": meta, "spec": {**head, **tail},
                    "status": {"phase": "Pending", "qosClass": shape.qos}}

        node_name = node["metadata"]["name"]
        if shape.pool == "daemon":  # the DaemonSet controller pins each pod to its node
            tail = {**tail, "affinity": {"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{
                    "matchFields": [{"key": "metadata.name", "operator": "In",
                                     "values": [node_name]}]}]}}}}
        spec = {**head, "nodeName": node_name, **tail}
        node_labels = node["metadata"]["labels"]
        meta["labels"] = _labels_in(w, node_labels[ZONE_LABEL], node_labels[REGION_LABEL])
        parts = _running_parts(w)
        host_ip = node["status"]["addresses"][0]["address"]
        ip = host_ip if spec.get("hostNetwork") else pod_ip
        status = {"phase": "Running", "conditions": parts["conditions"], "hostIP": host_ip,
                  "hostIPs": [{"ip": host_ip}], "podIP": ip, "podIPs": [{"ip": ip}],
                  "startTime": parts["start"]}
        if parts["init"]:
            status["initContainerStatuses"] = [self.started(s) for s in parts["init"]]
        status["containerStatuses"] = [self.started(s) for s in parts["main"]]
        status["qosClass"] = shape.qos
        before, after = parts["kubelet"]
        kubelet = {**before, "f:podIPs": {".": {}, f'k:{{"ip":"{ip}"}}': {".": {}, "f:ip": {}}},
                   **after}
        meta["managedFields"] = [w.creator, managed_entry("kubelet", parts["ready"],
                                                          {"f:status": kubelet},
                                                          subresource="status")]
        return {"metadata": meta, "spec": spec, "status": status}

    def started(self, st: dict) -> dict:
        """A container status template with fresh container and image IDs."""
        image = self.images.get(st["image"])
        cid = f"containerd://{self.rng.getrandbits(256):064x}"
        ref = st["image"]
        digest = image.digest if image else f"{_stable(ref, 256):064x}"
        out = {**st, "containerID": cid,
               "imageID": f"{image.repo if image else ref.rsplit(':', 1)[0]}@sha256:{digest}"}
        if "terminated" in st["state"]:
            out["state"] = {"terminated": {**st["state"]["terminated"], "containerID": cid}}
        return out


def _owner(api_version, kind, name, uid) -> dict:
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid,
            "controller": True, "blockOwnerDeletion": True}


def _daemonsets(rng: random.Random, pool: list, created: datetime) -> list:
    """kube-proxy, node-exporter (hostNetwork + hostPort), fluent-bit, GPU device plugin:
    (workload, runs on GPU nodes only)."""
    specs = (
        ("kube-proxy", pool[1], {"cpu": "100m"}, None, {}, True, False),
        ("node-exporter", pool[2], {"cpu": "50m", "memory": "64Mi"}, {"memory": "128Mi"},
         {"ports": [{"name": "metrics", "containerPort": 9100}]}, True, False),
        ("fluent-bit", pool[3], {"cpu": "0.1", "memory": "100Mi"}, {"memory": "500Mi"}, {},
         False, False),
        ("nvidia-device-plugin", pool[4], None, None, {}, False, True),
    )
    out = []
    for name, image, requests, limits, extra, host_network, gpu_only in specs:
        spec = {"containers": [_container(name, image, requests, limits, **extra)],
                "tolerations": _DAEMONSET_TOLERATIONS}
        if host_network:
            spec.update(hostNetwork=True, dnsPolicy="ClusterFirstWithHostNet")
        shape = _make_shape(spec, priority_class="system-node-critical", pool="daemon")
        labels = {"k8s-app": name, "controller-revision-hash": _suffix(rng, 10),
                  "pod-template-generation": "1"}
        owner = [_owner("apps/v1", "DaemonSet", name, uid_from(rng.getrandbits(128)))]
        out.append((_workload(shape, namespace="kube-system", base_name=f"{name}-",
                              labels=labels, owner=owner, created=created,
                              service_account=name,
                              token_volume=f"kube-api-access-{_suffix(rng, 5)}"), gpu_only))
    return out


class _Workloads:
    """Deployments and StatefulSets: names, labels and owners around a drawn shape."""

    def __init__(self, rng: random.Random, shapes: list, namespaces: list, zones: list):
        self.rng = rng
        self.shapes = shapes
        self.namespaces = namespaces
        self.zones = zones
        self.taken = set()

    def _app_name(self, namespace: str) -> str:
        rng = self.rng
        while True:
            name = f"{rng.choice(_WORDS)}-{rng.choice(_WORDS)}"
            if rng.random() < 0.5:
                name += f"-{rng.randint(1, 99)}"
            if (namespace, name) not in self.taken:
                self.taken.add((namespace, name))
                return name

    def draw(self, created: datetime) -> _Workload:
        rng = self.rng
        shape = rng.choice(self.shapes)
        namespace = rng.choice(self.namespaces)
        app = self._app_name(namespace)
        labels = {"app.kubernetes.io/name": app, "app": app}
        if rng.random() < 0.5:
            labels["tier"] = rng.choice(("frontend", "backend", "data"))
        owner_uid = uid_from(rng.getrandbits(128))
        if shape.statefulset:
            labels["controller-revision-hash"] = f"{app}-{_suffix(rng, 10)}"
            owner, base = [_owner("apps/v1", "StatefulSet", app, owner_uid)], f"{app}-"
        else:
            labels["pod-template-hash"] = pod_hash = _suffix(rng, 10)
            base = f"{app}-{pod_hash}-"
            owner = [_owner("apps/v1", "ReplicaSet", base[:-1], owner_uid)]
        return _workload(shape, namespace=namespace, base_name=base, labels=labels,
                         owner=owner, created=created,
                         service_account=app if rng.random() < 0.3 else "default", app=app,
                         token_volume=f"kube-api-access-{_suffix(rng, 5)}",
                         zone=rng.choice(self.zones) if shape.zone_pinned else None)


# ----------------------------------------------------------------------------- placement

@dataclass
class _NodeSlot:
    """A node's remaining room while pods are placed, and what it will report."""
    index: int
    zone: str
    pool: str
    itype: tuple
    cpu_free: int
    mem_free: int
    gpus_free: int
    pods_free: int = 110
    ip_next: int = 2
    images: set = field(default_factory=set)
    host_ports: set = field(default_factory=set)

    def fits(self, shape: _Shape) -> bool:
        return (self.pods_free > 0 and self.cpu_free >= shape.cpu_m
                and self.mem_free >= shape.mem and self.gpus_free >= shape.gpus
                and not (shape.host_ports and self.host_ports.intersection(shape.host_ports)))

    def take(self, w: _Workload) -> str:
        """Reserve room for one pod of `w`; returns its pod IP."""
        shape = w.shape
        self.pods_free -= 1
        self.cpu_free -= shape.cpu_m
        self.mem_free -= shape.mem
        self.gpus_free -= shape.gpus
        self.host_ports.update(shape.host_ports)
        self.images.update(w.images)
        n = self.index
        self.ip_next += 1
        return f"10.{64 + (n >> 8)}.{n & 255}.{self.ip_next - 1}"


def generate_cluster(nodes: int = 100, pods: int = 3000, zones: int = 3, seed: int = 1,
                     pending_fraction: float = 0.0, region: str = "region-1",
                     namespaces: int = 40) -> Cluster:
    """A cluster of `nodes` nodes and exactly `pods` pods, the same for the same arguments.

    Bound pods fit their node's allocatable cpu/memory/pods/GPUs and respect pools
    (taints), zone pinning and required anti-affinity; `pending_fraction` of the pods
    (and any that find no room) are unbound and Pending. Nodes get the first
    resourceVersions, then pods in list order.
    """
    cluster = Cluster()
    with gc_paused():
        cluster.pods = list(generate_pods(cluster, nodes, pods, zones, seed, pending_fraction,
                                          region, namespaces))
    return cluster


def generate_pods(cluster: Cluster, nodes: int, pods: int, zones: int, seed: int,
                  pending_fraction: float = 0.0, region: str = "region-1",
                  namespaces: int = 40):
    """generate_cluster's pods one at a time, `cluster.nodes` filled once the last is
    made: a store that takes each as it comes never holds 150,000 pods as dicts."""
    rng = random.Random(seed)
    zone_names = [f"zone-{chr(ord('a') + i)}" if i < 26 else f"zone-{i}" for i in range(zones)]
    pool = _image_pool(rng)
    by_ref = {img.ref: img for img in pool}
    slots = _node_slots(rng, nodes, zone_names)
    node_rvs = [cluster.next_rv() for _ in slots]
    stubs = [_node_stub(s, region) for s in slots]
    stamper = _Stamper(rng, cluster, by_ref)
    start = BASE_TIME + timedelta(days=1)
    pending_target = round(pods * pending_fraction)

    daemon_pods = 0
    for w, gpu_only in _daemonsets(rng, pool, start):
        targets = [s for s in slots if s.pool == "gpu" or not gpu_only]
        if daemon_pods + len(targets) > (pods - pending_target) * 0.3:
            continue
        used = set()
        daemon_pods += len(targets)
        for s in targets:
            yield stamper.stamp(w, _unique_name(rng, w.base_name, used), stubs[s.index],
                                s.take(w))

    library = _ShapeLibrary(rng, pool)
    shapes = [library.draw(statefulset=i % 10 == 0,
                           pool="gpu" if i % 150 == 7 else "infra" if i % 50 == 3 else "general",
                           host_port="any" if i % 50 == 5 else "ip" if i % 50 == 30 else "")
              for i in range(400)]
    workloads = _Workloads(rng, shapes, _namespace_names(namespaces), zone_names)
    candidates = {}
    for s in slots:
        candidates.setdefault((s.pool, None), []).append(s)
        candidates.setdefault((s.pool, s.zone), []).append(s)
    remaining = pods - daemon_pods
    pending = set(rng.sample(range(remaining), min(pending_target, remaining)))
    general = candidates.get(("general", None), slots)
    created = start
    k = misses = 0
    while k < remaining:
        created += timedelta(seconds=rng.randint(1, 600))
        w = workloads.draw(created)
        where = (candidates.get((w.shape.pool, w.zone)) or candidates.get((w.shape.pool, None))
                 or slots)
        replicas = rng.choices((1, 2, 3, 5, 8, 12, 20, 40), (10, 16, 20, 16, 12, 10, 8, 4))[0]
        used_names, used_nodes = set(), set()
        for ordinal in range(min(replicas, remaining - k)):
            slot = None
            if k not in pending:
                slot = _pick(rng, where, w, used_nodes, 8) or _pick(rng, where, w, used_nodes,
                                                                     200)
                constrained = (where is not general or w.shape.host_ports
                               or w.shape.affinity == "spread")
                if slot is None and constrained and misses < 100:
                    misses += 1
                    break  # no room for this workload: another one takes this pod's place
            name = (f"{w.base_name}{ordinal}" if w.shape.statefulset
                    else _unique_name(rng, w.base_name, used_names))
            k += 1
            if slot is None:  # meant to be pending, or no room at all: waits for a scheduler
                yield stamper.stamp(w, name, None)
                continue
            misses = 0
            used_nodes.add(slot.index)
            yield stamper.stamp(w, name, stubs[slot.index], slot.take(w))

    cluster.nodes = [_finish_node(rng, s, region, rv, pool, by_ref)
                     for s, rv in zip(slots, node_rvs)]


def _pick(rng, candidates, w, used_nodes, tries):
    spread = w.shape.affinity == "spread"
    for _ in range(tries):
        s = candidates[rng.randrange(len(candidates))]
        if s.fits(w.shape) and not (spread and s.index in used_nodes):
            return s
    return None


def _unique_name(rng, base, used) -> str:
    while True:
        name = base + _suffix(rng, 5)
        if name not in used:
            used.add(name)
            return name


def _node_ip(n: int) -> str:
    return f"10.0.{n >> 8}.{n & 255}"


def _namespace_names(count: int) -> list:
    return [f"team-{_WORDS[i % len(_WORDS)]}" + (f"-{i // len(_WORDS)}" if i >= len(_WORDS)
                                                 else "") for i in range(count)]


def _node_slots(rng, count, zones) -> list:
    weights = [t[4] for t in _INSTANCE_TYPES]
    slots = []
    for i in range(count):
        itype = rng.choices(_INSTANCE_TYPES, weights)[0]
        slots.append(_NodeSlot(i, zones[i % len(zones)], itype[5], itype,
                               itype[1] * 1000 - 150, itype[2] * 2**30 * 98 // 100, itype[3]))
    return slots


def _node_name(s: _NodeSlot) -> str:
    return f"node-{s.zone}-{s.index:05d}"


def _node_stub(s: _NodeSlot, region: str) -> dict:
    """What stamping a pod reads from its node, before the node object exists."""
    return {"metadata": {"name": _node_name(s), "labels": {ZONE_LABEL: s.zone,
                                                           REGION_LABEL: region}},
            "status": {"addresses": [{"type": "InternalIP", "address": _node_ip(s.index)}]}}


def _finish_node(rng, s: _NodeSlot, region, rv, pool, by_ref) -> dict:
    """The Node object: images = system + those of its pods + some popular ones (max 50)."""
    itype, cpu, mem_gib, gpus = s.itype[:4]
    extra = rng.choices(pool[5:], k=rng.randint(6, 24))
    refs = {img.ref for img in pool[:4]} | s.images | {img.ref for img in extra}
    images = sorted((by_ref[r] for r in refs), key=lambda img: (-img.size, img.ref))[:50]
    labels, taints = {}, None
    if s.pool == "gpu":
        labels["nvidia.com/gpu.present"] = "true"
        taints = [{"key": GPU, "value": "present", "effect": "NoSchedule"}]
    elif s.pool == "infra":
        labels["node-pool"] = "infra"
        taints = [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]
    n = s.index
    return make_node(
        _node_name(s), zone=s.zone, region=region, cpu=str(cpu),
        memory=f"{mem_gib * 1024 * 1024 - rng.randint(100_000, 400_000)}Ki",
        gpus=gpus, images=[img.status_entry for img in images], labels=labels,
        taints=taints, instance_type=itype, internal_ip=_node_ip(n),
        pod_cidr=f"10.{64 + (n >> 8)}.{n & 255}.0/24", uid=uid_from(rng.getrandbits(128)),
        resource_version=rv, created=BASE_TIME + timedelta(seconds=n))


# ----------------------------------------------------------------------------- single pods

def make_pod(name: str, *, namespace: str = "default", node_name: str | None = None,
             requests: dict | list | None = None, limits: dict | list | None = None,
             host_ports: list | None = None, labels: dict | None = None,
             init_containers: list | None = None, tolerations: list | None = None,
             node_selector: dict | None = None, affinity: dict | None = None,
             priority_class: str | None = None, priority: int | None = None,
             overhead: dict | None = None, volumes: list | None = None,
             zone: str = "zone-a", region: str = "region-1", host_ip: str = "10.0.0.1",
             pod_ip: str = "10.64.0.2", uid: str | None = None,
             resource_version: str = "1", created: datetime = BASE_TIME) -> dict:
    """One bare Pod (kind/apiVersion included): Running on `node_name` if given, else Pending.

    `requests`/`limits`: one dict for a single container, or lists (one per container).
    `host_ports`: ints, or dicts like {"hostPort": 80, "hostIP": "127.0.0.1", "protocol": "UDP"}.
    """
    reqs = requests if isinstance(requests, list) else [requests]
    lims = limits if isinstance(limits, list) else [limits] * len(reqs)
    containers = []
    for i, (r, lim) in enumerate(zip(reqs, lims)):
        c = {"name": f"c{i}", "image": "registry.k8s.io/pause:3.10"}
        if r or lim:
            c["resources"] = {k: v for k, v in (("limits", lim), ("requests", r)) if v}
        containers.append(c)
    if host_ports:
        containers[0]["ports"] = [
            {"containerPort": p, "hostPort": p} if isinstance(p, int)
            else {"containerPort": p["hostPort"], **p} for p in host_ports]
    spec = {"containers": containers}
    for key, value in (("initContainers", init_containers), ("tolerations", tolerations),
                       ("nodeSelector", node_selector), ("affinity", affinity),
                       ("overhead", overhead), ("volumes", volumes)):
        if value:
            spec[key] = value
    if priority is not None:
        spec["priority"] = priority
    w = _workload(_make_shape(spec, priority_class=priority_class), namespace=namespace,
                  base_name=name, labels=labels or {}, owner=None, created=created,
                  token_volume=f"kube-api-access-{_suffix(random.Random(name), 5)}",
                  manager="kubectl-create")
    node = None
    if node_name:
        node = {"metadata": {"name": node_name, "labels": {ZONE_LABEL: zone,
                                                            REGION_LABEL: region}},
                "status": {"addresses": [{"type": "InternalIP", "address": host_ip}]}}
    cluster = Cluster(resource_version=int(resource_version) - 1)
    pod = _Stamper(random.Random(f"{namespace}/{name}"), cluster, {}).stamp(w, name, node,
                                                                           pod_ip)
    if uid:
        pod["metadata"]["uid"] = uid
    return {"kind": "Pod", "apiVersion": "v1", **pod}


# ----------------------------------------------------------------------------- churn

class PodSource:
    """An endless supply of new unbound pods, drawn like generate_cluster's workloads
    (same namespaces for the same `namespaces` count), for the churn generator."""

    def __init__(self, seed: int = 1, namespaces: int = 40, zones: int = 3):
        rng = random.Random(f"churn/{seed}")
        pool = _image_pool(rng)
        library = _ShapeLibrary(rng, pool)
        shapes = [library.draw(statefulset=False, pool="general") for _ in range(100)]
        self._rng = rng
        self._workloads = _Workloads(rng, shapes, _namespace_names(namespaces),
                                     [f"zone-{chr(ord('a') + i)}" for i in range(zones)])
        self._stamper = _Stamper(rng, Cluster(), {img.ref: img for img in pool})

    def pending_pod(self, now: datetime) -> dict:
        w = self._workloads.draw(now)
        return self._stamper.stamp(w, _unique_name(self._rng, w.base_name, set()), None)
