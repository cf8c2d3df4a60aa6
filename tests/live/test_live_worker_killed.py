"""The Celery worker killed (SIGKILL, with its pool processes) in the middle of slow binds:
its unacknowledged bind messages come back to the next worker within seconds, so every pod
ends bound where it was assumed (or forgotten), none bound twice, within a minute."""
import os
import signal
import sys

import psutil
import pytest
from django.test import override_settings
from kubernetes import client, config

from dashboard.actions import schedule_pods
from dashboard.models import Transition

from livestack import Stack, child_env, clear_redis, new_pod, state_of, synced_owner, wait_for

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


def test_binds_of_a_killed_worker_are_redelivered_and_run_once(stack):
    stack.owner("owner-a")
    synced_owner()
    api = client.CoreV1Api(config.new_client_from_config(
        config_file=stack.env["SCHEDVIEW_KUBECONFIG"]))
    nodes = [n.metadata.name for n in api.list_node().items  # where the fit check lets them
             if not n.spec.taints and not n.spec.unschedulable]
    assert nodes
    names = [f"slow-{i}" for i in range(PODS)]
    uids = dict(zip(names, (new_pod(api, name) for name in names)))
    wait_for(lambda: all(state_of(u) == "Pending" for u in uids.values()), 30,
             "the pending pods")
    stack.control("faults", {"bind_delay": BIND_DELAY})
    first = worker(stack, "worker-a")
    placements = [("default", name, nodes[i % len(nodes)]) for i, name in enumerate(names)]
    assumed_on = {name: node for _, name, node in placements}
    # Two tasks of four pods, both taken by the first worker's two processes.
    with override_settings(SCHEDVIEW_BIND_BATCH=PODS // 2):
        results = schedule_pods(placements, actor="test")
    assert all(isinstance(r, dict) for r in results), results
    tasks = {r["task_id"] for r in results}

    def bound():
        return {p.metadata.name: p.spec.node_name for p in api.list_namespaced_pod("default").items
                if p.spec.node_name}
    wait_for(lambda: bound(), 60, "the worker's first Binding")
    assert len(bound()) < PODS, "the kill must come in the middle of the binds"
    assert all(task in stack.log("worker-a") for task in tasks)
    kill_tree(first)
    stack.processes.pop("worker-a")
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
    assert all(task in stack.log("worker-b") for task in tasks), "handed out again"
    for uid in uids.values():
        kinds = list(Transition.objects.filter(key=uid).values_list("kind", flat=True))
        assert kinds.count("pod_assumed") == 1 and "pod_forgotten" not in kinds, kinds
