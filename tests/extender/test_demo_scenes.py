"""The embedded default's staged scenes make the extender wait and preempt, for real:
the scenes' pods go into a served simulated cluster, the cache learns them as the
owner's watch would, and kube-scheduler's stand-in drives the real extender."""
import pytest

from dashboard import demo_scenes
from dashboard.extender import standin
from dashboard.extender.answers import ACTOR, VERB_OPS
from dashboard.extender.handlers import command_handlers
from simcluster import SimCluster
from simcluster.generate import GPU, Cluster, make_node, make_pod

GPU_TAINT = {"key": GPU, "value": "present", "effect": "NoSchedule"}
NODES = [make_node("cpu-1"), make_node("gpu-1", gpus=8, taints=[GPU_TAINT]),
         make_node("gpu-2", gpus=8, taints=[GPU_TAINT])]
# gpu-2 is the freer node: 6 of its 8 GPUs are free, gpu-1 has 2 free.
BUSY = [make_pod("train-a", node_name="gpu-1", uid="uid-a", requests={GPU: "6"},
                 tolerations=[{"key": GPU, "operator": "Exists"}]),
        make_pod("train-b", node_name="gpu-2", uid="uid-b", requests={GPU: "2"},
                 tolerations=[{"key": GPU, "operator": "Exists"}])]


@pytest.fixture
def sim():
    with SimCluster(cluster=Cluster(nodes=list(NODES), pods=list(BUSY)), kubelet=False,
                    namespaces=1) as s:
        yield s


class InProcessDoor:
    """The extender's verbs called in this process (the transport is tested elsewhere)."""

    def __init__(self, extender):
        self.handlers = command_handlers(extender)

    def call(self, verb, body):
        return self.handlers[VERB_OPS[verb]](body, ACTOR)


def watched(world, v1):
    """What the owner's watch would hold: every node, every assigned live pod."""
    for node in v1.api_client.sanitize_for_serialization(v1.list_node().items):
        world.cache.add_node(node)
    for pod in v1.api_client.sanitize_for_serialization(
            v1.list_pod_for_all_namespaces().items):
        if pod["spec"].get("nodeName") and not pod["metadata"].get("deletionTimestamp"):
            world.cache.add_pod(pod)


def test_the_scenes_fill_the_freest_gpu_node_and_ask_for_what_it_frees(v1):
    names = demo_scenes.stage(v1)
    assert names == ["demo-train-64-gpus", *(f"demo-batch-{i}" for i in range(6)),
                     "demo-urgent-train"]
    victims = [v1.read_namespaced_pod(f"demo-batch-{i}", "default") for i in range(6)]
    assert {(p.spec.node_name, p.spec.priority) for p in victims} == {("gpu-2", -10)}
    urgent = v1.read_namespaced_pod("demo-urgent-train", "default")
    assert (urgent.spec.node_name, urgent.spec.node_selector, urgent.spec.priority) == (
        None, {"kubernetes.io/hostname": "gpu-2"}, 1_000_000)
    assert urgent.spec.containers[0].resources.requests[GPU] == "6"


def test_through_the_extender_one_waits_and_one_preempts_then_binds(world, v1):
    demo_scenes.stage(v1)
    watched(world, v1)
    door = InProcessDoor(world.extender)
    counts = standin.schedule(v1, door, limit=10)
    assert counts == {"bind": 0, "wait": 1, "preempt": 1, "refused": 0, "victims": 6}
    uid = {p.metadata.name: p.metadata.uid for p in v1.list_namespaced_pod("default").items}
    assert world.statuses.state(uid["demo-train-64-gpus"]) == "Waiting"
    assert world.statuses.state(uid["demo-urgent-train"]) == "Preempting"

    for i in range(6):   # the kubelet finished the evicted pods; the watch saw them go
        pod = v1.read_namespaced_pod(f"demo-batch-{i}", "default")
        world.cache.remove_pod(v1.api_client.sanitize_for_serialization(pod))
        v1.delete_namespaced_pod(f"demo-batch-{i}", "default", grace_period_seconds=0)
    counts = standin.schedule(v1, door, limit=10)
    assert counts["bind"] == 1 and counts["wait"] == 1
    assert world.binds.calls == [(uid["demo-urgent-train"], "default", "demo-urgent-train",
                                  "gpu-2")]


def test_a_cluster_without_gpus_gets_only_the_waiting_job():
    with SimCluster(cluster=Cluster(nodes=[make_node("cpu-1")], pods=[]), kubelet=False,
                    namespaces=1) as s:
        from kubernetes import client
        api_client = s.api_client()
        try:
            assert demo_scenes.stage(client.CoreV1Api(api_client)) == ["demo-train-64-gpus"]
        finally:
            api_client.close()
