"""The embedded default's staged scenes make kube-scheduler's stand-in wait and preempt,
and the extender make a pod wait: the scenes' pods go into a served simulated cluster,
and the stand-in drives an extender answering as the captures' did (fake_extender.py),
its `filter` of the FPGA job answered by the real extender (the owner's, over a cache of
the same cluster)."""
import orjson
import pytest
from django.conf import settings

from kubernetes import client

from simcluster import SimCluster
from simcluster.generate import GPU, Cluster, make_node, make_pod

from dashboard.launcher import demo_scenes
from dashboard.standin.standin_view import PendingPod
from dashboard.wire.extender import WAITING
from tests.dashboard.owner.extender.extender_builders import World
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


IGNORED = frozenset(settings.SCHEDVIEW_STANDIN_IGNORED_RESOURCES)
CLAIM_PODS = ["demo-restore-job", "demo-scratch-job"]
SCENE_PODS = ["demo-train-64-gpus", "demo-fpga-job", *(f"demo-batch-{i}" for i in range(6)),
              "demo-urgent-train", *CLAIM_PODS]


def test_the_scenes_fill_the_freest_gpu_node_and_ask_for_what_it_frees(v1):
    names = demo_scenes.stage(v1)
    assert names == SCENE_PODS
    victims = [v1.read_namespaced_pod(f"demo-batch-{i}", "default") for i in range(6)]
    assert {(p.spec.node_name, p.spec.priority) for p in victims} == {("gpu-2", -10)}
    urgent = v1.read_namespaced_pod("demo-urgent-train", "default")
    assert (urgent.spec.node_name, urgent.spec.node_selector, urgent.spec.priority) == (
        None, {"kubernetes.io/hostname": "gpu-2"}, 1_000_000)
    assert urgent.spec.containers[0].resources.requests[GPU] == "6"


def owner_extender(sim):
    """The owner's extender (real cache, DefaultAlgorithm, statuses) over the cluster's
    nodes and placed pods, shown every pod the cluster holds as the watch would."""
    world = World()
    for node in NODES:
        world.cache.add_node(node)
    for pod in BUSY:
        world.cache.add_pod(pod)
    api_client = sim.api_client()
    try:
        raw = client.CoreV1Api(api_client).list_namespaced_pod("default",
                                                               _preload_content=False)
        world.known.update((p["metadata"]["uid"], p) for p in orjson.loads(raw.data)["items"])
    finally:
        api_client.close()
    return world


def answer_fpga_filter(extender, world):
    """The FPGA job's `filter` answered by the owner's extender, the rest by the fake."""
    def answer(body):
        if body["Pod"]["metadata"]["name"] == "demo-fpga-job":
            return 200, world.extender.filter(body)
        return None
    extender.answers["filter"] = answer


def test_the_fpga_job_passes_kube_scheduler_s_filters_and_the_extender_makes_it_wait(sim):
    """The statuses page's Waiting pod: kube-scheduler's fit filter ignores the FPGA, so
    `filter` is called (08 gpu-9), and the extender, which counts every resource, refuses
    the node: Waiting, with the node's reason; kube-scheduler reports it Unschedulable."""
    with running_stand_in(sim, IGNORED) as (v1, extender, scheduler):
        demo_scenes.stage(v1)
        world = owner_extender(sim)
        answer_fpga_filter(extender, world)
        uid = {p.metadata.name: p.metadata.uid for p in v1.list_namespaced_pod("default").items}
        settle(scheduler.view, lambda: uid["demo-fpga-job"] in scheduler.view.pending,
               "the FPGA job")
        scheduler.period(now=1000.0)
        # Only cpu-1 passes kube-scheduler's filters (the GPU nodes' taint is not tolerated)
        filtered = [body for verb, name, body in extender.calls
                    if (verb, name) == ("filter", "demo-fpga-job")]
        assert [body["NodeNames"] for body in filtered] == [["cpu-1"]]
        status = world.statuses.get(uid["demo-fpga-job"])
        assert (status.state, dict(status.wait_reasons)) == (
            WAITING, {"cpu-1": "Insufficient example.com/fpga"})
        assert status.summary()["reasons"] == {"Insufficient example.com/fpga": 1}
        condition = v1.read_namespaced_pod("demo-fpga-job", "default").status.conditions[0]
        assert (condition.type, condition.status, condition.reason) == (
            "PodScheduled", "False", "Unschedulable")
        assert condition.message.startswith(
            "0/3 nodes are available: 1 Insufficient example.com/fpga, 2 node(s) had "
            "untolerated taint")


def test_without_the_ignored_resource_kube_scheduler_refuses_the_fpga_job_itself(sim):
    """Why the setting: a fit filter that counts the FPGA leaves no node, so the extender
    is never asked and holds no status for the pod (02 rej-2)."""
    with running_stand_in(sim) as (v1, extender, scheduler):
        demo_scenes.stage(v1)
        settle(scheduler.view, lambda: any(p.thaw()["metadata"]["name"] == "demo-fpga-job"
                                           for p in scheduler.view.pending.values()),
               "the FPGA job")
        scheduler.period(now=1000.0)
        assert extender.verbs("demo-fpga-job") == []


def test_through_the_stand_in_one_waits_and_one_preempts_then_binds(sim):
    with running_stand_in(sim, IGNORED) as (v1, extender, scheduler):
        demo_scenes.stage(v1)
        answer_fpga_filter(extender, owner_extender(sim))
        uid = {p.metadata.name: p.metadata.uid for p in v1.list_namespaced_pod("default").items}
        settle(scheduler.view, lambda: {uid["demo-train-64-gpus"], uid["demo-urgent-train"],
                                        uid["demo-fpga-job"]} <= set(scheduler.view.pending),
               "the scenes' pending pods")
        counts = scheduler.period(now=1000.0)
        # No node can make room for 64 GPUs: no preempt call for it (02 rej-2); the FPGA
        # job is refused by the extender's filter; the restore job's claim does not exist
        # (no call either), the scratch job's does: it binds.
        assert counts == {"bind": 1, "wait": 3, "preempt": 1, "error": 0, "victims": 6}
        assert [call for call in extender.verbs() if call[1] != "demo-scratch-job"] == [
            ("preempt", "demo-urgent-train"), ("filter", "demo-fpga-job")]
        assert extender.verbs("demo-scratch-job") == [("filter", "demo-scratch-job"),
                                                      ("bind", "demo-scratch-job")]
        restore = v1.read_namespaced_pod("demo-restore-job", "default").status.conditions[0]
        assert (restore.reason, restore.message) == (
            "Unschedulable", '0/3 nodes are available: persistentvolumeclaim '
                             '"demo-restore-snapshot" not found. not found')
        assert list(extender.calls[0][2]["NodeNameToMetaVictims"]) == ["gpu-2"]
        urgent = v1.read_namespaced_pod("demo-urgent-train", "default")
        assert urgent.status.nominated_node_name == "gpu-2"

        for i in range(6):   # the kubelet finished the evicted pods
            assert v1.read_namespaced_pod(f"demo-batch-{i}", "default").metadata.deletion_timestamp
            v1.delete_namespaced_pod(f"demo-batch-{i}", "default", grace_period_seconds=0)
        settle(scheduler.view, lambda: not any(n.startswith("demo-batch")
                                               for n in pod_names(scheduler.view)),
               "the evicted pods go")
        counts = scheduler.period(now=1010.0)
        assert counts["bind"] == 1
        assert extender.verbs("demo-urgent-train")[1:] == [("filter", "demo-urgent-train"),
                                                           ("bind", "demo-urgent-train")]
        assert v1.read_namespaced_pod("demo-urgent-train", "default").spec.node_name == "gpu-2"


def pod_names(view):
    """The names of the pods the stand-in's view holds: a placed one as the cache's digest,
    a pending one frozen."""
    for key in view.cache.pod_keys():
        yield view.cache.pod_info(key).name
    for pod in view.held.values():
        yield (pod.thaw() if isinstance(pod, PendingPod) else pod)["metadata"]["name"]


def test_a_cluster_without_gpus_gets_only_the_waiting_job():
    with SimCluster(cluster=Cluster(nodes=[make_node("cpu-1")], pods=[]), kubelet=False,
                    namespaces=1) as s:
        api_client = s.api_client()
        try:
            assert demo_scenes.stage(client.CoreV1Api(api_client)) == [
                "demo-train-64-gpus", "demo-fpga-job", *CLAIM_PODS]
        finally:
            api_client.close()


def free_gpus_recorded(sim):
    """free_gpus() of the cluster, and the API client that recorded its lists."""
    from tests.dashboard.feedhelpers import RecordingApi
    api_client = sim.api_client()
    try:
        api = RecordingApi(api_client)
        return demo_scenes.free_gpus(api), api
    finally:
        api_client.close()


def test_free_gpus_lists_nodes_a_page_at_a_time_and_only_the_gpu_nodes_pods(sim, monkeypatch):
    # the supervisor never lists every pod (issue 26: at 600,000 pods the paged list held
    # `up` for minutes); a finished pod frees its GPUs
    done = make_pod("done", node_name="gpu-2", uid="uid-done", requests={GPU: "5"},
                    tolerations=[{"key": GPU, "operator": "Exists"}])
    done["status"]["phase"] = "Succeeded"
    sim.api.insert("pods", done)
    sim.api.insert("pods", make_pod("web", node_name="cpu-1", uid="uid-web"))
    monkeypatch.setattr(demo_scenes, "PAGE_SIZE", 1)
    found, api = free_gpus_recorded(sim)
    assert found == ("gpu-2", 6)
    assert all(call["limit"] == 1 for call in api.calls)
    # one call a node, then one a pod of the GPU nodes: cpu-1's pod is never read
    assert [call.get("field_selector") for call in api.calls] == [None] * len(NODES) + [
        "spec.nodeName=gpu-1", "spec.nodeName=gpu-2", "spec.nodeName=gpu-2"]


def test_free_gpus_asks_for_the_pods_of_the_nodes_with_most_gpus_only(sim, monkeypatch):
    sim.api.insert("nodes", make_node("gpu-big", gpus=16, taints=[GPU_TAINT]))
    monkeypatch.setattr(demo_scenes, "CANDIDATES", 1)
    found, api = free_gpus_recorded(sim)
    assert found == ("gpu-big", 16)
    assert [call["field_selector"] for call in api.calls if "field_selector" in call] == [
        "spec.nodeName=gpu-big"]
