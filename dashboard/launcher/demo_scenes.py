"""Four scenes the embedded default stages: a pod that waits, a pod the extender makes
wait (its Waiting status, with reasons), the extender's Preempting, and a pod whose
PersistentVolumeClaim does not exist.

The simulated cluster's churn makes pods that fit somewhere, so kube-scheduler's
stand-in (dashboard/standin/standin.py) only ever binds them. `manage.py up` therefore adds,
through the Kubernetes API like any user:

- a training job asking for more GPUs than any node has: it stays Pending for good.
  kube-scheduler's own filters leave it no node and its preemption finds no victims,
  so the extender is never called for it (shared k8s-wire/extender 02 rej-2, 07
  noop-2) and it has no schedule status: the stand-in writes kube-scheduler's
  PodScheduled=False condition on the pod instead;
- a job asking for an FPGA, a resource the stand-in's fit filter leaves to the extender
  (SCHEDVIEW_STANDIN_IGNORED_RESOURCES, as kube-scheduler's ignoredResources: shared
  k8s-wire/extender 08 gpu-9) and no node has: it passes kube-scheduler's own filters,
  so `filter` is called, and the extender's algorithm, which checks every resource,
  refuses every node. The extender's statuses hold it Waiting with each node's reason
  ("Insufficient example.com/fpga"), the statuses page's Waiting pod;
- on one GPU node, low-priority batch pods holding every free GPU (created bound,
  as a DaemonSet's or an earlier scheduler's would be), and a high-priority pod that
  needs those GPUs on that node: the stand-in finds no node for it and offers the
  batch pods to the extender's preempt, evicts the victims it answers, and the pod
  binds once they are gone;
- a restore job whose volume names a claim nobody created: kube-scheduler's VolumeBinding
  refuses it before trying any node (the why-pending capture's missing-pvc), so its page
  and the Pending page say `0/N nodes are available: persistentvolumeclaim
  "demo-restore-snapshot" not found. not found`; beside it a job mounting a claim that
  exists, which is placed as any pod (the claims' existence is all that is checked).
"""
from kubernetes import client

from schedcache.resource import node_allocatable, pod_requests

from dashboard.kube.reflector import Reflector

GPU = "nvidia.com/gpu"
# The demo's resource only the extender checks (settings.SCHEDVIEW_STANDIN_IGNORED_RESOURCES).
FPGA = "example.com/fpga"
NAMESPACE = "default"
# The simulated cluster's priority classes; a pod carries the value admission would set.
PRIORITIES = {"batch-low": -10, "high-priority": 1_000_000}
TOLERATE_GPU = {"key": GPU, "operator": "Exists", "effect": "NoSchedule"}
TOO_MANY_GPUS = 64
_FINISHED = ("Succeeded", "Failed")
PAGE_SIZE = 500      # objects a list page holds
CANDIDATES = 20      # GPU nodes whose pods free_gpus asks for
MISSING_CLAIM = "demo-restore-snapshot"    # never created
PRESENT_CLAIM = "demo-scratch"


def _pod(name: str, amount: int, priority_class: str = "", *, node: str = "",
         selector: dict | None = None, role: str, device: str = GPU) -> dict:
    """A pod asking for `amount` of `device` (an extended resource: requests equal limits)."""
    resources = {"requests": {"cpu": "1", "memory": "4Gi", device: str(amount)},
                 "limits": {device: str(amount)}}
    spec = {"containers": [{"name": "main", "image": "nvcr.io/nvidia/pytorch:24.10-py3",
                            "resources": resources}],
            "priority": PRIORITIES.get(priority_class, 0)}
    if device == GPU:
        spec["tolerations"] = [TOLERATE_GPU]
    if priority_class:
        spec["priorityClassName"] = priority_class
    if node:
        spec["nodeName"] = node
    if selector:
        spec["nodeSelector"] = selector
    return _demo_object("Pod", name, role, spec)


def _claim_pod(name: str, claim: str, role: str) -> dict:
    """A small pod mounting the PersistentVolumeClaim `claim`."""
    spec = {"containers": [{"name": "main", "image": "registry.k8s.io/busybox:1.37",
                            "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
                            "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]}
    return _demo_object("Pod", name, role, spec)


def _demo_object(kind: str, name: str, role: str, spec: dict) -> dict:
    return {"apiVersion": "v1", "kind": kind,
            "metadata": {"name": name, "namespace": NAMESPACE,
                         "labels": {"app.kubernetes.io/part-of": "schedview-demo",
                                    "schedview.io/demo-role": role,
                                    # the simulated cluster's churn never deletes it
                                    "simcluster.io/keep": "true"}},
            "spec": spec}


def free_gpus(api: client.CoreV1Api) -> tuple[str, int] | None:
    """A GPU node with free GPUs, and how many: of the CANDIDATES GPU nodes with the most
    GPUs, the one with the most free; None without GPU nodes.

    The supervisor never lists the cluster's pods (issue 26: at 600,000 pods the paged list
    alone held `up` for minutes before the owners started): it lists the nodes, a page at
    a time, then the pods of each candidate node alone (`spec.nodeName=`, the field
    selector kubelets list their pods by)."""
    total = [(name, gpus) for name, gpus in _listed(api, "nodes", _node_gpus) if gpus]
    candidates = sorted(total, key=lambda item: (-item[1], item[0]))[:CANDIDATES]
    if not candidates:
        return None
    used = {name: sum(_listed(api, "pods", _pod_gpus, field_selector=f"spec.nodeName={name}"))
            for name, _ in candidates}
    return max(((name, gpus - used[name]) for name, gpus in candidates),
               key=lambda item: item[1])


def _listed(api: client.CoreV1Api, kind: str, digest, field_selector: str = "") -> list:
    """Every `kind` object (of `field_selector`), each cut by `digest` as its page is read,
    so a page of whole objects at a time is held (list_once hands its sink nothing)."""
    return Reflector(api, kind, sink=None, page_size=PAGE_SIZE, digest=digest,
                     field_selector=field_selector).list_once().items


def _node_gpus(node) -> tuple[str, int]:
    return node["metadata"]["name"], node_allocatable(node).scalar_resources.get(GPU, 0)


def _pod_gpus(pod) -> int:
    """The GPUs a pod requests; a finished pod's are free again."""
    if (pod.get("status") or {}).get("phase") in _FINISHED:
        return 0
    return pod_requests(pod["spec"])[0].scalar_resources.get(GPU, 0)


def stage(api: client.CoreV1Api) -> list[str]:
    """Create the scenes' pods; returns their names (none for a cluster without GPUs)."""
    created = [_pod("demo-train-64-gpus", TOO_MANY_GPUS, role="waits"),
               _pod("demo-fpga-job", 1, role="extender-waits", device=FPGA)]
    found = free_gpus(api)
    if found is not None and found[1] > 0:
        node, free = found
        created += [_pod(f"demo-batch-{i}", 1, "batch-low", node=node, role="victim")
                    for i in range(free)]
        created.append(_pod("demo-urgent-train", free, "high-priority",
                            selector={"kubernetes.io/hostname": node}, role="preempts"))
    # the claim first, so that its job never looks to the scheduler as one whose claim is
    # missing
    api.create_namespaced_persistent_volume_claim(NAMESPACE, _demo_object(
        "PersistentVolumeClaim", PRESENT_CLAIM, "claim",
        {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Gi"}}}),
        _preload_content=False).release_conn()
    created += [_claim_pod("demo-restore-job", MISSING_CLAIM, role="claim-missing"),
                _claim_pod("demo-scratch-job", PRESENT_CLAIM, role="claim-present")]
    for body in created:
        api.create_namespaced_pod(NAMESPACE, body, _preload_content=False).release_conn()
    return [body["metadata"]["name"] for body in created]
