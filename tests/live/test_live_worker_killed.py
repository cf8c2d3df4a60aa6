"""The Celery worker killed (SIGKILL, with its pool processes) in the middle of slow binds:
its unacknowledged bind messages come back to the next worker within seconds, so every pod
ends bound where it was assumed (or forgotten), none bound twice, within a minute.

The binds take production's path into Celery: the owner's extender binds pods itself when
kube-scheduler no longer suggests their node, and its BindSender publishes them as
bind_pods tasks."""
import os
import re
import signal
import sys

import orjson
import psutil
import pytest
from kubernetes import client, config

from dashboard.models import Transition
from tests.live.livestack import Stack, child_env, clear_redis, new_pod, state_of, synced_owner
from tests.waiting import wait_for

pytestmark = pytest.mark.timeout(240)

REDELIVERY = 8          # seconds: SCHEDVIEW_BIND_REDELIVERY of the stack's workers
BIND_DELAY = 1.0        # seconds the cluster takes over every Binding
PODS = 8


@pytest.fixture
def stack(redis_url, transactional_db, tmp_path):
    clear_redis()
    kubeconfig = tmp_path / "kubeconfig"
    s = Stack(tmp_path, child_env(tmp_path, redis_url, kubeconfig, cache_ttl=0,
                                  compare_period=3600, bind_redelivery=REDELIVERY))
    s.cluster(kubeconfig, "--nodes", "6", "--pods", "0", "--zones", "1")
    try:
        yield s
    finally:
        s.stop_all()


def worker(stack, name):
    return stack.start(name, [sys.executable, "-m", "celery", "-A", "dashboard", "worker",
                              "--loglevel", "INFO", "--concurrency", "2",
                              "--hostname", f"{name}@%h"])


def kill_tree(process):
    """SIGKILL a worker and its pool processes at once, as the kernel's OOM killer or a
    lost node would end them: nothing gets to acknowledge or requeue."""
    family = [process.pid] + [p.pid for p in psutil.Process(process.pid).children(True)]
    for pid in family:
        os.kill(pid, signal.SIGKILL)
    process.wait(timeout=10)


def bind_tasks(log, event):
    """Ids of the bind tasks a worker's log says were `event` (received, succeeded)."""
    return set(re.findall(r"worker\.tasks\.bind_pods?\[([0-9a-f-]+)\] " + event, log))


class KubeScheduler:
    """The filter calls kube-scheduler makes to the owner's extender (nodeCacheCapable)."""

    def __init__(self, stack, api):
        self.http, self.url, self.api = stack.http, stack.extender(), api

    def filter(self, name, nodes) -> list:
        pod = orjson.loads(self.api.read_namespaced_pod(name, "default",
                                                        _preload_content=False).data)
        response = self.http.request("POST", f"{self.url}/filter",
                                     body=orjson.dumps({"Pod": pod, "Nodes": None,
                                                        "NodeNames": nodes}),
                                     headers={"Content-Type": "application/json"})
        assert response.status == 200, response.data
        result = orjson.loads(response.data)
        assert result["Error"] == "", result
        return result["NodeNames"] or []


def test_binds_of_a_killed_worker_are_redelivered_and_run_once(stack):
    stack.owner("owner-a")
    synced_owner()
    api = client.CoreV1Api(config.new_client_from_config(
        config_file=stack.env["SCHEDVIEW_KUBECONFIG"]))
    nodes = [n.metadata.name for n in api.list_node().items  # where the fit check lets them
             if not n.spec.taints and not n.spec.unschedulable]
    assert len(nodes) > 1
    names = [f"slow-{i}" for i in range(PODS)]
    uids = dict(zip(names, (new_pod(api, name) for name in names)))
    wait_for(lambda: all(state_of(u) == "Pending" for u in uids.values()), 30,
             "the pending pods")
    scheduler = KubeScheduler(stack, api)
    assumed_on = {}
    for name in names:                   # the extender assumes each pod on a node...
        [assumed_on[name]] = scheduler.filter(name, nodes)
    stack.control("faults", {"bind_delay": BIND_DELAY})
    first = worker(stack, "worker-a")
    for name in names:                   # ...that kube-scheduler then no longer suggests
        others = [n for n in nodes if n != assumed_on[name]]
        assert scheduler.filter(name, others) == [], "the pod keeps its placement"

    def bound():
        return {p.metadata.name: p.spec.node_name for p in api.list_namespaced_pod("default").items
                if p.spec.node_name}
    wait_for(lambda: bound(), 60, "the worker's first Binding")
    assert len(bound()) < PODS, "the kill must come in the middle of the binds"
    kill_tree(first)
    stack.processes.pop("worker-a")
    log = stack.log("worker-a")
    unfinished = bind_tasks(log, "received") - bind_tasks(log, "succeeded")
    assert unfinished, "the killed worker held bind tasks"
    worker(stack, "worker-b")

    def settled():
        states = {name: state_of(uid) for name, uid in uids.items()}
        return states if all(s in ("Added", "Pending") for s in states.values()) else None
    states = wait_for(settled, 60, "every pod bound or forgotten")
    placed = bound()
    for name, state in states.items():
        if state == "Added":
            assert placed[name] == assumed_on[name]
        else:
            assert name not in placed
    assert sum(s == "Added" for s in states.values()) == PODS, states
    assert unfinished <= bind_tasks(stack.log("worker-b"), "received"), "handed out again"
    for uid in uids.values():
        kinds = list(Transition.objects.filter(key=uid).values_list("kind", flat=True))
        assert kinds.count("pod_assumed") == 1 and "pod_forgotten" not in kinds, kinds
