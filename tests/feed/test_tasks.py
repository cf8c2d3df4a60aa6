"""The Celery tasks with a real worker on the run's Redis, against a served SimCluster.

The owner is a recording CommandServer in a thread (test_commands.ServerThread).
"""
import threading
import time

import pytest

from dashboard.extender.statuses import annotated_node
from celery.contrib.testing.worker import start_worker

from dashboard import tasks
from dashboard.celery import app
from simcluster import SimCluster
from simcluster.generate import generate_cluster, make_pod
from simcluster.status import ApiError
from test_commands import ServerThread, queued, rclient  # noqa: F401  (rclient: a fixture)

NS = "t"
OPS = ("finish_binding", "forget", "reap", "compare")


@pytest.fixture(scope="module")
def worker(redis_url):
    """A real worker (solo pool, in a thread of this process) on the run's Redis."""
    app.control.purge()          # nothing left over from an earlier run on a shared Redis
    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=30) as w:
        yield w


@pytest.fixture(scope="module")
def cluster_data():
    data = generate_cluster(nodes=3, pods=0, zones=3, seed=3, namespaces=1)
    nodes = [n["metadata"]["name"] for n in data.nodes]
    data.pods += [make_pod(f"p{i}", namespace=NS, uid=f"uid-p{i}") for i in range(12)]
    data.pods.append(make_pod("bound", namespace=NS, uid="uid-bound", node_name=nodes[0]))
    return data


@pytest.fixture
def sim(cluster_data):
    with SimCluster(cluster=cluster_data, kubelet=False, namespaces=1) as s:
        yield s


@pytest.fixture
def nodes(cluster_data):
    return [n["metadata"]["name"] for n in cluster_data.nodes]


@pytest.fixture
def kube(sim, settings, tmp_path):
    """Point the tasks at `sim`, with fast retries."""
    settings.SCHEDVIEW_KUBECONFIG = sim.write_kubeconfig(tmp_path / "kubeconfig")
    settings.SCHEDVIEW_BIND_BACKOFF = 0.01
    settings.SCHEDVIEW_BIND_TIMEOUT = 2.0
    settings.SCHEDVIEW_BIND_ATTEMPTS = 3
    return sim


@pytest.fixture
def owner(rclient):  # noqa: F811
    with ServerThread(ops=OPS) as o:
        yield o


@pytest.fixture
def binds(sim, monkeypatch):
    """Count the bind requests reaching the server (after its fault knobs are drawn)."""
    calls = []
    before = sim.faults.before_bind

    def counting(namespace, name):
        calls.append(name)
        before(namespace, name)

    monkeypatch.setattr(sim.faults, "before_bind", counting)
    return calls


def settled(owner, uid):
    """Wait for the finish_binding or forget of `uid`; return (op, args, actor)."""
    records = owner.wait_for(lambda rs: any(op in ("finish_binding", "forget")
                                            and a.get("uid") == uid for op, a, _ in rs))
    return next(r for r in records if r[0] in ("finish_binding", "forget")
                and r[1].get("uid") == uid)


# -- through the worker ----------------------------------------------------------------------

def test_pending_pod_is_bound_and_finished(worker, kube, owner, nodes, binds):
    before = time.time()
    tasks.bind_pod.delay("uid-p0", NS, "p0", nodes[1])
    op, args, actor = settled(owner, "uid-p0")
    assert (op, actor) == ("finish_binding", "bind")
    assert args["node"] == nodes[1] and before <= args["now"] <= time.time()
    assert kube.pod(NS, "p0")["spec"]["nodeName"] == nodes[1]
    assert annotated_node(kube.pod(NS, "p0")) == nodes[1]   # the extender restores from it
    assert binds == ["p0"]


@pytest.mark.parametrize("attempts", [1, 3])
def test_failing_bind_is_retried_then_forgotten(worker, kube, owner, nodes, binds, settings,
                                                attempts):
    settings.SCHEDVIEW_BIND_ATTEMPTS = attempts
    kube.faults.update(bind_failure_rate=1.0, bind_failure_code=500)
    tasks.bind_pod.delay("uid-p1", NS, "p1", nodes[0])
    op, args, actor = settled(owner, "uid-p1")
    assert (op, actor) == ("forget", "bind")
    assert args["node"] == nodes[0]
    assert "500" in args["reason"] and f"after {attempts} attempts" in args["reason"]
    assert binds == ["p1"] * attempts        # forgotten only after the last attempt
    assert owner.ops("finish_binding") == []
    assert not kube.pod(NS, "p1")["spec"].get("nodeName")


def test_transient_failure_is_retried_until_it_binds(worker, kube, owner, nodes, binds,
                                                     monkeypatch):
    calls = []

    def fail_twice(namespace, name):
        calls.append(name)
        if len(calls) <= 2:
            raise ApiError(503, "try later", "ServiceUnavailable")

    monkeypatch.setattr(kube.faults, "before_bind", fail_twice)
    tasks.bind_pod.delay("uid-p2", NS, "p2", nodes[2])
    op, args, _ = settled(owner, "uid-p2")
    assert op == "finish_binding"
    assert calls == ["p2"] * 3
    assert kube.pod(NS, "p2")["spec"]["nodeName"] == nodes[2]


def test_write_conflict_on_an_unbound_pod_is_retried(worker, kube, owner, nodes, binds):
    kube.faults.update(bind_failure_rate=1.0, bind_failure_code=409)
    tasks.bind_pod.delay("uid-p3", NS, "p3", nodes[0])
    op, args, _ = settled(owner, "uid-p3")
    assert op == "forget" and "conflict" in args["reason"]
    assert binds == ["p3"] * 3


def test_already_bound_to_the_same_node_finishes(worker, kube, owner, nodes, binds):
    tasks.bind_pod.delay("uid-bound", NS, "bound", nodes[0])
    op, args, _ = settled(owner, "uid-bound")
    assert op == "finish_binding" and args["node"] == nodes[0]
    assert binds == ["bound"]                # no retry after the 409


def test_already_bound_elsewhere_forgets(worker, kube, owner, nodes, binds):
    tasks.bind_pod.delay("uid-bound", NS, "bound", nodes[1])
    op, args, _ = settled(owner, "uid-bound")
    assert op == "forget" and args["node"] == nodes[1]
    assert f"already bound to {nodes[0]}" in args["reason"]
    assert binds == ["bound"]
    assert kube.pod(NS, "bound")["spec"]["nodeName"] == nodes[0]   # never bound twice


def test_replaced_pod_of_the_same_name_is_forgotten(worker, kube, owner, nodes):
    kube.api.bind(NS, "p4", {"target": {"name": nodes[1]}})         # someone else bound it...
    tasks.bind_pod.delay("uid-of-an-older-p4", NS, "p4", nodes[1])   # ...and it is not ours
    op, args, _ = settled(owner, "uid-of-an-older-p4")
    assert op == "forget" and "replaced" in args["reason"]


def test_refusal_that_cannot_succeed_is_not_retried(worker, kube, owner, nodes, binds):
    kube.faults.update(bind_failure_rate=1.0, bind_failure_code=422)
    tasks.bind_pod.delay("uid-p3", NS, "p3", nodes[0])
    op, args, _ = settled(owner, "uid-p3")
    assert op == "forget" and "refused: 422" in args["reason"]
    assert binds == ["p3"]


def test_missing_pod_forgets(worker, kube, owner, nodes, binds):
    tasks.bind_pod.delay("uid-ghost", NS, "ghost", nodes[0])
    op, args, _ = settled(owner, "uid-ghost")
    assert op == "forget" and "not found" in args["reason"]
    assert binds == ["ghost"]                # one try: a missing pod is not retried


def test_unreachable_api_is_retried_then_forgotten(worker, kube, owner, nodes):
    kube.kill()
    tasks.bind_pod.delay("uid-p5", NS, "p5", nodes[0])
    op, args, _ = settled(owner, "uid-p5")
    assert op == "forget" and "after 3 attempts" in args["reason"]


def test_lost_reply_is_read_back_and_finished(worker, kube, owner, nodes, settings,
                                              monkeypatch):
    """The bind went through but its reply never came (read timeout): the retry gets 409,
    finds the pod on our node and finishes it, rather than forgetting a bound pod."""
    settings.SCHEDVIEW_BIND_TIMEOUT = 1.0
    release = threading.Event()
    real_bind = kube.api.bind
    calls = []

    def bind_then_hang(*args, **kwargs):
        calls.append(args[1])
        real_bind(*args, **kwargs)
        if len(calls) == 1:
            release.wait(10)                 # the reply is held past the client's timeout

    monkeypatch.setattr(kube.api, "bind", bind_then_hang)
    try:
        tasks.bind_pod.delay("uid-p6", NS, "p6", nodes[2])
        op, args, _ = settled(owner, "uid-p6")
    finally:
        release.set()
    assert op == "finish_binding"
    assert calls == ["p6", "p6"]
    assert kube.pod(NS, "p6")["spec"]["nodeName"] == nodes[2]


def test_bind_pods_batch(worker, kube, owner, nodes, binds, monkeypatch):
    batch = [[f"uid-p{i}", NS, f"p{i}", nodes[i % 3]] for i in range(7, 11)]
    batch.append(["uid-ghost", NS, "ghost", nodes[0]])
    tasks.bind_pods.delay(batch)
    uids = [b[0] for b in batch]
    owner.wait_for(lambda rs: {a.get("uid") for _, a, _ in rs} >= set(uids))
    finished = {a["uid"] for a, actor in owner.ops("finish_binding")}
    forgotten = {a["uid"] for a, actor in owner.ops("forget")}
    assert finished == set(uids[:4]) and forgotten == {"uid-ghost"}
    for uid, ns, name, node in batch[:4]:
        assert kube.pod(ns, name)["spec"]["nodeName"] == node


def test_bind_pods_retries_failures_one_by_one(worker, kube, owner, nodes, monkeypatch):
    calls = []

    def fail_first(namespace, name):
        calls.append(name)
        if calls.count(name) == 1 and name == "p11":
            raise ApiError(500, "flaky", "InternalError")

    monkeypatch.setattr(kube.faults, "before_bind", fail_first)
    tasks.bind_pods.delay([["uid-p8", NS, "p8", nodes[0]], ["uid-p11", NS, "p11", nodes[1]]])
    owner.wait_for(lambda rs: len([r for r in rs if r[0] == "finish_binding"]) == 2)
    assert calls == ["p8", "p11", "p11"]
    assert kube.pod(NS, "p11")["spec"]["nodeName"] == nodes[1]


def test_reap_and_compare_send_their_commands(worker, owner):
    before = time.time()
    tasks.reap.delay()
    tasks.compare.delay()
    owner.wait_for(lambda rs: {"reap", "compare"} <= {op for op, _, _ in rs})
    [(args, actor)] = owner.ops("reap")
    assert actor == "reaper" and before <= args["now"] <= time.time()
    assert owner.ops("compare") == [({}, "comparer")]


# -- the commands themselves (tasks run in this process, no worker) ------------------------

def test_finish_and_forget_wait_for_any_owner(kube, rclient, nodes):  # noqa: F811
    """Sent without reply and without deadline: they stay queued through an owner failover."""
    assert tasks.bind_pod("uid-p9", NS, "p9", nodes[0]) == "finish"
    assert tasks.bind_pod("uid-ghost", NS, "ghost", nodes[0]) == "forget"
    finish, forget = queued(rclient)
    assert finish["op"] == "finish_binding" and forget["op"] == "forget"
    for msg in (finish, forget):
        assert msg["deadline"] is None and msg["reply"] is False and msg["actor"] == "bind"


def test_running_a_bind_twice_binds_once(kube, rclient, nodes, binds):  # noqa: F811
    """What a redelivered (acks_late) bind does: the second run finds the pod on its node."""
    assert tasks.bind_pod("uid-p10", NS, "p10", nodes[1]) == "finish"
    rv = kube.pod(NS, "p10")["metadata"]["resourceVersion"]
    assert tasks.bind_pod("uid-p10", NS, "p10", nodes[1]) == "finish"
    assert kube.pod(NS, "p10")["metadata"]["resourceVersion"] == rv
    assert [m["op"] for m in queued(rclient)] == ["finish_binding", "finish_binding"]


def test_unexpected_error_is_forgotten_after_the_last_attempt(rclient, settings,  # noqa: F811
                                                              tmp_path, caplog):
    settings.SCHEDVIEW_KUBECONFIG = tmp_path / "no-such-kubeconfig"
    settings.SCHEDVIEW_BIND_ATTEMPTS = 1
    assert tasks.bind_pod("uid-x", NS, "x", "node") == "forget"
    [msg] = queued(rclient)
    assert msg["op"] == "forget" and "after 1 attempts" in msg["args"]["reason"]
    assert any(r.exc_info for r in caplog.records)     # logged with its traceback


def test_retry_that_cannot_be_queued_forgets(kube, rclient, nodes, monkeypatch):  # noqa: F811
    def broker_down(*args, **kwargs):
        raise OSError("broker down")

    kube.faults.update(bind_failure_rate=1.0, bind_failure_code=500)
    monkeypatch.setattr(tasks.bind_pod, "apply_async", broker_down)
    assert tasks.bind_pod("uid-p3", NS, "p3", nodes[0]) == "forget"
    [msg] = queued(rclient)
    assert "could not queue attempt 2: broker down" in msg["args"]["reason"]


@pytest.mark.parametrize("task, period", [(tasks.reap, "SCHEDVIEW_REAP_PERIOD"),
                                          (tasks.compare, "SCHEDVIEW_COMPARE_PERIOD")])
def test_periodic_commands_die_with_their_period(rclient, settings, task, period):  # noqa: F811
    setattr(settings, period, 7.0)
    before = time.time()
    task()
    [msg] = queued(rclient)
    assert msg["reply"] is False
    assert before + 7.0 <= msg["deadline"] <= time.time() + 7.0


def test_beat_schedule(settings):
    schedule = settings.CELERY_BEAT_SCHEDULE
    for name, period in (("reap", settings.SCHEDVIEW_REAP_PERIOD),
                         ("compare", settings.SCHEDVIEW_COMPARE_PERIOD)):
        entry = schedule[name]
        assert entry["task"] in app.tasks
        assert entry["schedule"] == period
        assert 0 < entry["options"]["expires"] < period


def test_bind_tasks_are_acknowledged_after_they_ran():
    for task in (tasks.bind_pod, tasks.bind_pods):
        assert task.acks_late and task.reject_on_worker_lost and task.ignore_result


def test_backoff_doubles_and_is_capped(settings):
    settings.SCHEDVIEW_BIND_BACKOFF = 0.1
    assert [tasks.backoff(a) for a in (1, 2, 3, 10)] == [0.1, 0.2, 0.4, 2.0]
