"""Tiny builders of Kubernetes API JSON dicts (what `kubectl get -o json` prints).

Only data construction lives here: no expectations, no cache logic.
"""

import copy

# Topology labels, as upstream names them.
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
TOPO_ZONE = "topology.kubernetes.io/zone"
TOPO_REGION = "topology.kubernetes.io/region"

MI = 1024 * 1024
GI = 1024 * MI


def port(host_port=None, ip=None, protocol=None, container_port=None):
    """A container port; ip/protocol left out entirely when None."""
    p = {"containerPort": container_port if container_port is not None else (host_port or 8080)}
    if host_port is not None:
        p["hostPort"] = host_port
    if ip is not None:
        p["hostIP"] = ip
    if protocol is not None:
        p["protocol"] = protocol
    return p


def container(name="c", cpu=None, memory=None, ephemeral=None, extra=None, ports=()):
    """A container; only the requests that are given appear in the JSON."""
    requests = {}
    if cpu is not None:
        requests["cpu"] = cpu
    if memory is not None:
        requests["memory"] = memory
    if ephemeral is not None:
        requests["ephemeral-storage"] = ephemeral
    for k, v in (extra or {}).items():
        requests[k] = v
    c = {"name": name, "image": "registry.example/app:1", "resources": {}}
    if requests:
        c["resources"]["requests"] = requests
    if ports:
        c["ports"] = [dict(p) for p in ports]
    return c


def pod_affinity_required(key="app", value="web"):
    return {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {key: value}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }


def pod_anti_affinity_required(key="app", value="web"):
    return {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {key: value}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }


def pod_anti_affinity_preferred(key="app", value="web"):
    return {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 10,
                    "podAffinityTerm": {
                        "labelSelector": {"matchLabels": {key: value}},
                        "topologyKey": "kubernetes.io/hostname",
                    },
                }
            ]
        }
    }


def node_affinity_only():
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}
                ]
            }
        }
    }


AFFINITIES = {
    "none": None,
    "pod_affinity": pod_affinity_required,
    "anti_required": pod_anti_affinity_required,
    "anti_preferred": pod_anti_affinity_preferred,
    "node_only": node_affinity_only,
}


def pvc_volume(claim, name=None):
    return {"name": name or ("vol-" + claim), "persistentVolumeClaim": {"claimName": claim}}


def pod(
    name="pod",
    node="node-1",
    *,
    uid=None,
    namespace="default",
    cpu=None,
    memory=None,
    ephemeral=None,
    extra=None,
    ports=(),
    containers=None,
    init_containers=None,
    overhead=None,
    labels=None,
    affinity=None,
    pvcs=(),
    volumes=None,
    no_uid=False,
    resource_version="1",
):
    """A pod. Without `containers`, one container carries cpu/memory/ephemeral/extra/ports.

    The uid defaults to "uid-<namespace>-<name>" so that two builds of the same pod
    are two versions of one cache key.
    """
    if containers is None:
        containers = [container(cpu=cpu, memory=memory, ephemeral=ephemeral, extra=extra, ports=ports)]
    meta = {"name": name, "namespace": namespace, "resourceVersion": resource_version}
    if not no_uid:
        meta["uid"] = uid if uid is not None else "uid-%s-%s" % (namespace, name)
    if labels:
        meta["labels"] = dict(labels)
    spec = {"containers": copy.deepcopy(containers)}
    if node is not None:
        spec["nodeName"] = node
    if init_containers:
        spec["initContainers"] = copy.deepcopy(init_containers)
    if overhead:
        spec["overhead"] = dict(overhead)
    if affinity:
        spec["affinity"] = copy.deepcopy(affinity)
    vols = list(volumes or [])
    vols += [pvc_volume(c) for c in pvcs]
    if vols:
        spec["volumes"] = vols
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": "Pending"}}


def on_node(p, node):
    """The same pod (same uid) naming another node."""
    q = copy.deepcopy(p)
    if node is None:
        q["spec"].pop("nodeName", None)
    else:
        q["spec"]["nodeName"] = node
    return q


def new_version(p, **changes):
    """A later version of the same pod: deep copy, bumped resourceVersion, optional edits.

    changes: labels=..., cpu=... (replaces the first container's cpu request),
    phase=... (status.phase).
    """
    q = copy.deepcopy(p)
    rv = int(q["metadata"].get("resourceVersion", "1")) + 1
    q["metadata"]["resourceVersion"] = str(rv)
    if "labels" in changes:
        q["metadata"]["labels"] = dict(changes["labels"])
    if "cpu" in changes:
        q["spec"]["containers"][0].setdefault("resources", {}).setdefault("requests", {})["cpu"] = changes["cpu"]
    if "phase" in changes:
        q["status"]["phase"] = changes["phase"]
    return q


def zone_labels(region=None, zone=None, beta=False):
    labels = {}
    if region is not None:
        labels[BETA_REGION if beta else TOPO_REGION] = region
    if zone is not None:
        labels[BETA_ZONE if beta else TOPO_ZONE] = zone
    return labels


def node(
    name="node-1",
    *,
    cpu=None,
    memory=None,
    ephemeral=None,
    pods=None,
    scalars=None,
    labels=None,
    region=None,
    zone=None,
    beta=False,
    images=(),
    resource_version="1",
):
    """A node. images: iterable of (names, sizeBytes) or (name, sizeBytes)."""
    allocatable = {}
    if cpu is not None:
        allocatable["cpu"] = cpu
    if memory is not None:
        allocatable["memory"] = memory
    if ephemeral is not None:
        allocatable["ephemeral-storage"] = ephemeral
    if pods is not None:
        allocatable["pods"] = pods
    for k, v in (scalars or {}).items():
        allocatable[k] = v
    all_labels = {"kubernetes.io/hostname": name}
    all_labels.update(zone_labels(region, zone, beta))
    all_labels.update(labels or {})
    imgs = []
    for names, size in images:
        if isinstance(names, str):
            names = [names]
        imgs.append({"names": list(names), "sizeBytes": size})
    status = {"allocatable": allocatable, "capacity": dict(allocatable)}
    if imgs:
        status["images"] = imgs
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": all_labels, "resourceVersion": resource_version},
        "spec": {},
        "status": status,
    }


def relabel_node(n, labels):
    """The same node with labels replaced (hostname label kept)."""
    q = copy.deepcopy(n)
    name = q["metadata"]["name"]
    q["metadata"]["labels"] = {"kubernetes.io/hostname": name, **labels}
    q["metadata"]["resourceVersion"] = str(int(q["metadata"].get("resourceVersion", "1")) + 1)
    return q


def uid_of(p):
    return p["metadata"]["uid"]


def name_of(obj):
    return obj["metadata"]["name"]
