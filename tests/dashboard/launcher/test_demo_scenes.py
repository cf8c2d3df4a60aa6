"""The embedded default's staged scenes make kube-scheduler's stand-in wait and preempt:
the scenes' pods go into a served simulated cluster, and the stand-in drives an extender
answering as the captures' did (fake_extender.py)."""
import pytest

from simcluster import SimCluster
from simcluster.generate import GPU, Cluster, make_node, make_pod

from dashboard.launcher import demo_scenes
from tests.dashboard.standin.fake_extender import running_stand_in, settle

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


def test_through_the_stand_in_one_waits_and_one_preempts_then_binds(sim):
    with running_stand_in(sim) as (v1, extender, scheduler):
        demo_scenes.stage(v1)
        uid = {p.metadata.name: p.metadata.uid for p in v1.list_namespaced_pod("default").items}
        settle(scheduler.view, lambda: {uid["demo-train-64-gpus"], uid["demo-urgent-train"]}
               <= set(scheduler.view.pending), "the scenes' pending pods")
        counts = scheduler.period(now=1000.0)
        # No node can make room for 64 GPUs: no preempt call for it (02 rej-2).
        assert counts == {"bind": 0, "wait": 1, "preempt": 1, "error": 0, "victims": 6}
        assert extender.verbs() == [("preempt", "demo-urgent-train")]
        assert list(extender.calls[0][2]["NodeNameToMetaVictims"]) == ["gpu-2"]
        urgent = v1.read_namespaced_pod("demo-urgent-train", "default")
        assert urgent.status.nominated_node_name == "gpu-2"

        for i in range(6):   # the kubelet finished the evicted pods
            assert v1.read_namespaced_pod(f"demo-batch-{i}", "default").metadata.deletion_timestamp
            v1.delete_namespaced_pod(f"demo-batch-{i}", "default", grace_period_seconds=0)
        settle(scheduler.view, lambda: not any(n.startswith("demo-batch")
                                          for n in map(pod_name, scheduler.view.pods.values())),
               "the evicted pods go")
        counts = scheduler.period(now=1010.0)
        assert counts["bind"] == 1 and counts["wait"] == 1
        assert extender.verbs()[1:] == [("filter", "demo-urgent-train"),
                                        ("bind", "demo-urgent-train")]
        assert v1.read_namespaced_pod("demo-urgent-train", "default").spec.node_name == "gpu-2"


def pod_name(pod):
    return pod["metadata"]["name"]


def test_a_cluster_without_gpus_gets_only_the_waiting_job():
    with SimCluster(cluster=Cluster(nodes=[make_node("cpu-1")], pods=[]), kubelet=False,
                    namespaces=1) as s:
        from kubernetes import client
        api_client = s.api_client()
        try:
            assert demo_scenes.stage(client.CoreV1Api(api_client)) == ["demo-train-64-gpus"]
        finally:
            api_client.close()


def test_free_gpus_reads_both_lists_a_page_at_a_time(sim, monkeypatch):
    # the supervisor never parses every pod at once (issue 26: one unpaged list of
    # 600,000 assigned pods took 3.5 GB); a finished pod frees its GPUs
    from tests.dashboard.feedhelpers import RecordingApi
    done = make_pod("done", node_name="gpu-2", uid="uid-done", requests={GPU: "5"},
                    tolerations=[{"key": GPU, "operator": "Exists"}])
    done["status"]["phase"] = "Succeeded"
    sim.api.insert("pods", done)
    monkeypatch.setattr(demo_scenes, "PAGE_SIZE", 1)
    api_client = sim.api_client()
    try:
        api = RecordingApi(api_client)
        assert demo_scenes.free_gpus(api) == ("gpu-2", 6)
    finally:
        api_client.close()
    assert len(api.calls) == len(NODES) + len(BUSY) + 1   # one object a page
    assert all(call["limit"] == 1 for call in api.calls)
