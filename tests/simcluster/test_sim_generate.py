"""The generated cluster: deterministic, realistic, within node capacity."""

import re
from collections import Counter, defaultdict

import orjson
import pytest

from schedcache.quantity import milli_value as milli, parse_quantity
from simcluster.defaults import new_node, new_pod
from simcluster.generate import (Cluster, generate_cluster, generate_pods, make_node,
                                 make_pod)

from tests.simcluster.simhelpers import capture, capture_request_body

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


@pytest.fixture(scope="module")
def cluster():
    return generate_cluster(nodes=100, pods=3000, zones=3, seed=3, pending_fraction=0.05)


def test_same_seed_same_bytes_and_other_seed_differs():
    a = generate_cluster(nodes=10, pods=200, zones=2, seed=5)
    b = generate_cluster(nodes=10, pods=200, zones=2, seed=5)
    c = generate_cluster(nodes=10, pods=200, zones=2, seed=6)
    assert orjson.dumps([a.nodes, a.pods]) == orjson.dumps([b.nodes, b.pods])
    assert orjson.dumps(a.pods) != orjson.dumps(c.pods)


def test_pods_made_one_at_a_time_are_the_cluster_and_the_nodes_come_last():
    """SimCluster stores each pod as generate_pods makes it; the nodes, which sum their
    pods' images, exist only once the last pod is made."""
    whole = generate_cluster(nodes=10, pods=200, zones=2, seed=5, pending_fraction=0.1)
    streamed = Cluster()
    pods = generate_pods(streamed, 10, 200, 2, 5, 0.1)
    first = next(pods)
    assert streamed.nodes == []
    rest = list(pods)
    assert orjson.dumps([first, *rest]) == orjson.dumps(whole.pods)
    assert orjson.dumps(streamed.nodes) == orjson.dumps(whole.nodes)
    assert streamed.resource_version == whole.resource_version


def test_counts_pending_share_and_zones(cluster):
    assert len(cluster.nodes) == 100 and len(cluster.pods) == 3000
    pending = [p for p in cluster.pods if "nodeName" not in p["spec"]]
    assert len(pending) == 150
    assert all(p["status"] == {"phase": "Pending", "qosClass": p["status"]["qosClass"]}
               for p in pending)
    zones = Counter(n["metadata"]["labels"]["topology.kubernetes.io/zone"] for n in cluster.nodes)
    assert set(zones) == {"zone-a", "zone-b", "zone-c"}


def test_resource_versions_increase_and_uids_are_unique(cluster):
    rvs = [int(o["metadata"]["resourceVersion"]) for o in cluster.nodes + cluster.pods]
    assert sorted(rvs) == rvs == list(range(1, len(rvs) + 1))
    assert cluster.resource_version == rvs[-1]
    uids = [o["metadata"]["uid"] for o in cluster.nodes + cluster.pods]
    assert len(set(uids)) == len(uids) and all(UUID.match(u) for u in uids)
    keys = {(p["metadata"]["namespace"], p["metadata"]["name"]) for p in cluster.pods}
    assert len(keys) == len(cluster.pods)


def test_bound_pods_fit_their_nodes(cluster):
    nodes = {n["metadata"]["name"]: n for n in cluster.nodes}
    cpu, count, gpus = defaultdict(int), Counter(), Counter()
    for p in cluster.pods:
        node = p["spec"].get("nodeName")
        if not node:
            continue
        count[node] += 1
        for c in p["spec"]["containers"]:
            requests = (c.get("resources") or {}).get("requests") or {}
            cpu[node] += milli(requests.get("cpu", "0"))
            gpus[node] += int(requests.get("nvidia.com/gpu", 0))
        assert p["status"]["phase"] == "Running"
        labels = p["metadata"]["labels"]
        assert labels["topology.kubernetes.io/zone"] == \
            nodes[node]["metadata"]["labels"]["topology.kubernetes.io/zone"]
    for name, n in nodes.items():
        alloc = n["status"]["allocatable"]
        assert count[name] <= int(alloc["pods"])
        assert cpu[name] <= milli(alloc["cpu"])
        assert gpus[name] <= int(alloc.get("nvidia.com/gpu", 0))
    assert max(count.values()) > 1


def test_required_anti_affinity_spreads_replicas(cluster):
    per_owner = defaultdict(list)
    for p in cluster.pods:
        anti = ((p["spec"].get("affinity") or {}).get("podAntiAffinity") or {})
        if anti.get("requiredDuringSchedulingIgnoredDuringExecution") and p["spec"].get("nodeName"):
            per_owner[p["metadata"]["ownerReferences"][0]["uid"]].append(p["spec"]["nodeName"])
    assert per_owner
    assert all(len(nodes) == len(set(nodes)) for nodes in per_owner.values())


def test_feature_mix(cluster):
    pods = cluster.pods
    specs = [p["spec"] for p in pods]
    owners = Counter(p["metadata"]["ownerReferences"][0]["kind"] for p in pods
                     if p["metadata"].get("ownerReferences"))
    assert {"ReplicaSet", "StatefulSet", "DaemonSet"} <= set(owners)
    assert all("pod-template-hash" in p["metadata"]["labels"] for p in pods
               if p["metadata"].get("ownerReferences", [{}])[0].get("kind") == "ReplicaSet")
    sidecars = [c for s in specs for c in s.get("initContainers", ())
                if c.get("restartPolicy") == "Always"]
    plain_init = [c for s in specs for c in s.get("initContainers", ())
                  if "restartPolicy" not in c]
    assert sidecars and plain_init
    assert any("overhead" in s for s in specs)
    ports = [pt for s in specs for c in s["containers"] for pt in c.get("ports", ())
             if "hostPort" in pt]
    assert any("hostIP" in pt for pt in ports) and any("hostIP" not in pt for pt in ports)
    requests = [r for s in specs for c in s["containers"]
                for r in [(c.get("resources") or {}).get("requests") or {}]]
    assert any("nvidia.com/gpu" in r for r in requests)
    assert any("ephemeral-storage" in r for r in requests)
    forms = {q for r in requests for q in r.values()}
    assert {"250m", "0.5", "1", "512Mi", "1G", "2Gi"} <= forms
    assert any(v.get("persistentVolumeClaim", {}).get("claimName") for s in specs
               for v in s["volumes"])
    assert all(any(v["name"].startswith("kube-api-access-") for v in s["volumes"])
               for s in specs)
    assert all(s["serviceAccountName"] for s in specs)
    affinities = {k for s in specs for k in (s.get("affinity") or {})}
    assert {"nodeAffinity", "podAffinity", "podAntiAffinity"} <= affinities
    assert any(s.get("priorityClassName") for s in specs)
    assert any(s.get("nodeSelector") for s in specs)
    qos = Counter(p["status"]["qosClass"] for p in pods)
    assert set(qos) == {"BestEffort", "Burstable", "Guaranteed"}


def test_running_pods_look_like_a_live_cluster(cluster):
    pod = next(p for p in cluster.pods if p["spec"].get("nodeName")
               and p["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet")
    status = pod["status"]
    assert [c["type"] for c in status["conditions"]] == [
        "PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"]
    assert status["hostIP"] and status["podIPs"] == [{"ip": status["podIP"]}]
    assert status["startTime"]
    assert all(c["containerID"].startswith("containerd://") and c["ready"]
               for c in status["containerStatuses"])
    managers = [(m["manager"], m.get("subresource")) for m in pod["metadata"]["managedFields"]]
    assert managers == [("kube-controller-manager", None), ("kubelet", "status")]
    assert list(pod) == ["metadata", "spec", "status"]
    sizes = [len(orjson.dumps(p)) for p in cluster.pods]
    assert 3000 < sum(sizes) / len(sizes) < 7000


def test_nodes_share_images_and_report_capacity(cluster):
    counts = Counter()
    for n in cluster.nodes:
        images = n["status"]["images"]
        assert 10 <= len(images) <= 50
        for img in images:
            repo_digest, repo_tag = img["names"]
            assert "@sha256:" in repo_digest and ":" in repo_tag and img["sizeBytes"] > 0
            counts[repo_tag] += 1
        status = n["status"]
        assert parse_quantity(status["allocatable"]["memory"]) <= \
            parse_quantity(status["capacity"]["memory"])
        assert status["capacity"]["pods"] == "110"
        assert [c["type"] for c in status["conditions"]][-1] == "Ready"
    assert max(counts.values()) > 0.9 * len(cluster.nodes)  # e.g. the daemonsets' images
    assert any(n["status"]["capacity"].get("nvidia.com/gpu") for n in cluster.nodes)
    assert any(n["spec"].get("taints") for n in cluster.nodes)


def test_make_node_and_make_pod():
    node = make_node("n1", zone="zone-b", cpu="8", memory="32Gi", pods="20",
                     taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}],
                     labels={"pool": "x"}, images=[{"names": ["a@sha256:0", "a:1"],
                                                    "sizeBytes": 5}])
    assert node["kind"] == "Node"
    assert node["metadata"]["labels"]["topology.kubernetes.io/zone"] == "zone-b"
    assert node["metadata"]["labels"]["pool"] == "x"
    assert node["status"]["capacity"]["cpu"] == "8" and node["status"]["allocatable"]["pods"] == "20"
    assert node["spec"]["taints"][0]["key"] == "k"

    bound = make_pod("p1", namespace="ns", node_name="n1", zone="zone-b",
                     requests=[{"cpu": "250m"}, {"memory": "1Gi"}],
                     host_ports=[8080, {"hostPort": 53, "protocol": "UDP", "hostIP": "10.0.0.1"}])
    assert bound["kind"] == "Pod" and bound["spec"]["nodeName"] == "n1"
    assert bound["status"]["phase"] == "Running"
    assert bound["metadata"]["labels"]["topology.kubernetes.io/zone"] == "zone-b"
    assert len(bound["spec"]["containers"]) == 2
    assert bound["spec"]["containers"][0]["ports"][1] == {
        "hostPort": 53, "containerPort": 53, "protocol": "UDP", "hostIP": "10.0.0.1"}
    pending = make_pod("p2", limits={"cpu": "1", "memory": "1Gi"})
    assert "nodeName" not in pending["spec"] and pending["status"] == {
        "phase": "Pending", "qosClass": "Guaranteed"}
    assert make_pod("p3")["status"]["qosClass"] == "BestEffort"


@pytest.mark.parametrize("name,make", [
    ("20-pod-create-full", new_pod), ("22-pod-create-simple", new_pod),
    ("41-pod-create-watched", new_pod), ("4a-pod-create-unbound", new_pod),
    ("10-node-create", new_node), ("51-node2-create", new_node)])
def test_server_defaults_match_the_apiserver_byte_for_byte(name, make):
    want = capture(name + ".body.json")
    meta = orjson.loads(want)["metadata"]
    kwargs = dict(uid=meta["uid"], resource_version=meta["resourceVersion"],
                  now=meta["creationTimestamp"], manager="wire-capture")
    if make is new_pod:
        kwargs["namespace"] = "wire"
    assert orjson.dumps(make(capture_request_body(name), **kwargs)) + b"\n" == want
