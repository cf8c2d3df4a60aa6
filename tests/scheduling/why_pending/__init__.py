"""The cluster of the why-pending recording (why_pending/cases.json, a copy of
shared/k8s-wire/why-pending/), as objects the cache and the owner's feed take: the
nodes as they were, the placed pods its README describes, and each case's pod as
admission left it."""
import copy
import json
from pathlib import Path

from simcluster.generate import make_node, make_pod

CASES = json.loads((Path(__file__).parent / "cases.json").read_text())
BY_NAME = {case["case"]: case for case in CASES["cases"]}
# The recording names the priority classes, not their values: any low < high will do.
PRIORITIES = {"low": 100, "high": 1000}


def node(recorded):
    """A node of nodes_before as the API server lists it."""
    allocatable = recorded["allocatable"]
    built = make_node(recorded["name"], zone=recorded["labels"]["topology.kubernetes.io/zone"],
                      allocatable=allocatable, labels=recorded["labels"],
                      taints=recorded["taints"] or None)
    built["status"]["capacity"] = dict(allocatable)
    if recorded["unschedulable"]:
        built["spec"]["unschedulable"] = True
    return built


def placed_pods():
    """The placed pods, as the README describes them."""
    small = {"cpu": "100m", "memory": "64Mi"}
    return [
        make_pod("port-holder", namespace="why", node_name="small-0", requests=small,
                 host_ports=[8080], uid="uid-port-holder"),
        *(make_pod(f"low-{i}", namespace="why", node_name="small-1",
                   requests={"cpu": "1200m", "memory": "64Mi"}, labels={"team": "batch"},
                   priority_class="low", priority=PRIORITIES["low"], uid=f"uid-low-{i}")
          for i in range(3)),
        make_pod("db-0", namespace="why", node_name="small-2", requests=small,
                 labels={"role": "db"}, uid="uid-db-0"),
        make_pod("tiny-filler", namespace="why", node_name="tiny-0", requests=small,
                 uid="uid-tiny-filler"),
    ]


def pending(case):
    """The case's pod with a uid, and the priority admission gives its class."""
    pod = copy.deepcopy(case["pod"])
    pod["metadata"]["uid"] = f"uid-{pod['metadata']['name']}"
    priority_class = pod["spec"].get("priorityClassName")
    if priority_class:
        pod["spec"]["priority"] = PRIORITIES[priority_class]   # as admission sets it
    return pod
