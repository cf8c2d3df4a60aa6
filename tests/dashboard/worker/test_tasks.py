"""The Celery tasks with a real worker on the run's Redis, against a served SimCluster.

The owner is a recording CommandServer in a thread (test_commands.ServerThread).
"""
import threading
import time

import pytest
from celery.contrib.testing.worker import start_worker
from celery.exceptions import SoftTimeLimitExceeded
from django.db import OperationalError

from simcluster import SimCluster
from simcluster.generate import generate_cluster, make_pod
from simcluster.status import ApiError

from dashboard.celery import app
from dashboard.models import LeaseTerm
from dashboard.owner.extender import bindsender
from dashboard.owner.extender.bindsender import BindSender
from dashboard.owner.runner import publish_binds
from dashboard.wire.extender import annotated_node
from dashboard.worker import tasks
from tests.dashboard.owner.test_commands import ServerThread, queued, rclient  # noqa: F401  (rclient: a fixture)

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


def queued_retries(task, monkeypatch):
    """Record the retries `task` queues, [(args, options)], and queue them."""
    queued, apply_async = [], task.apply_async

    def recording(args=None, kwargs=None, **options):
        if options.get("retries"):          # not the first send
            queued.append((tuple(args), options))
        return apply_async(args, kwargs, **options)

    monkeypatch.setattr(task, "apply_async", recording)
    return queued


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


def test_bind_pods_retries_its_failures_alone(worker, kube, owner, nodes, monkeypatch):
    calls = []

    def fail_first(namespace, name):
        calls.append(name)
        if calls.count(name) == 1 and name == "p11":
            raise ApiError(500, "flaky", "InternalError")

    monkeypatch.setattr(kube.faults, "before_bind", fail_first)
    retried = queued_retries(tasks.bind_pods, monkeypatch)
    tasks.bind_pods.delay([["uid-p8", NS, "p8", nodes[0]], ["uid-p11", NS, "p11", nodes[1]]])
    owner.wait_for(lambda rs: len([r for r in rs if r[0] == "finish_binding"]) == 2)
    assert calls == ["p8", "p11", "p11"]
    assert [args for args, _ in retried] == [([["uid-p11", NS, "p11", nodes[1]]],)]
    assert kube.pod(NS, "p11")["spec"]["nodeName"] == nodes[1]


def test_bind_pods_forgets_each_pod_with_its_own_cause(worker, kube, owner, nodes, settings,
                                                      monkeypatch):
    settings.SCHEDVIEW_BIND_ATTEMPTS = 2

    def refuse(namespace, name):
        if name == "p8":
            raise ApiError(500, "flaky", "InternalError")
        if name == "p9":
            raise ApiError(503, "busy", "ServiceUnavailable")

    monkeypatch.setattr(kube.faults, "before_bind", refuse)
    tasks.bind_pods.delay([["uid-p8", NS, "p8", nodes[0]], ["uid-ghost", NS, "ghost", nodes[0]],
                           ["uid-p9", NS, "p9", nodes[1]], ["uid-p10", NS, "p10", nodes[2]]])
    owner.wait_for(lambda rs: len(rs) == 4)
    reasons = {a["uid"]: a["reason"] for a, _ in owner.ops("forget")}
    assert reasons.keys() == {"uid-p8", "uid-ghost", "uid-p9"}
    # the API server's answer, status and message, is the cause the pod's timeline keeps
    assert reasons["uid-p8"] == "binding answered 500 Internal Server Error: flaky " \
                                "(after 2 attempts)"
    assert "503" in reasons["uid-p9"] and reasons["uid-p9"].endswith("(after 2 attempts)")
    assert reasons["uid-ghost"] == "pod not found"
    assert [a["uid"] for a, _ in owner.ops("finish_binding")] == ["uid-p10"]


def test_pods_a_batch_had_no_time_for_are_retried(worker, kube, owner, nodes, monkeypatch):
    """The soft time limit stops a batch between two pods: the rest is its retry."""
    bind_once, calls = tasks.bind_once, []

    def out_of_time_at_the_second(*pod):
        calls.append(pod[2])
        if len(calls) == 2:
            raise SoftTimeLimitExceeded()
        return bind_once(*pod)

    monkeypatch.setattr(tasks, "bind_once", out_of_time_at_the_second)
    retried = queued_retries(tasks.bind_pods, monkeypatch)
    batch = [[f"uid-p{i}", NS, f"p{i}", nodes[i % 3]] for i in (7, 8, 9)]
    tasks.bind_pods.delay(batch)
    owner.wait_for(lambda rs: len([r for r in rs if r[0] == "finish_binding"]) == 3)
    assert calls == ["p7", "p8", "p8", "p9"]
    assert [args for args, _ in retried] == [(batch[1:],)]
    for uid, ns, name, node in batch:
        assert kube.pod(ns, name)["spec"]["nodeName"] == node


def test_retries_back_off_doubling_up_to_a_cap(worker, kube, owner, nodes, settings,
                                               monkeypatch):
    settings.SCHEDVIEW_BIND_ATTEMPTS = 5
    settings.SCHEDVIEW_BIND_BACKOFF = 0.01
    monkeypatch.setattr(tasks, "BACKOFF_MAX", 0.03)
    kube.faults.update(bind_failure_rate=1.0, bind_failure_code=500)
    retried = queued_retries(tasks.bind_pod, monkeypatch)
    app.send_task(tasks.bind_pod.name, ("uid-p7", NS, "p7", nodes[0]))
    op, args, _ = settled(owner, "uid-p7")
    assert op == "forget" and args["reason"].endswith("(after 5 attempts)")
    assert [(o["retries"], o["countdown"]) for _, o in retried] == [
        (1, 0.01), (2, 0.02), (3, 0.03), (4, 0.03)]


def test_extender_binds_reach_the_worker_as_one_batch(worker, kube, owner, nodes,
                                                      monkeypatch):
    """Production's batched path: the owner's BindSender publishes the binds that gathered
    while it lingered as one bind_pods task (runner.publish_binds)."""
    monkeypatch.setattr(bindsender, "LINGER", 0.5)
    published = []

    def publish(batch):
        published.append(len(batch))
        publish_binds(batch)

    sender = BindSender(publish)
    pods = [(f"uid-p{i}", NS, f"p{i}", nodes[i % 3]) for i in (4, 5, 6)]
    for pod in pods:
        sender(*pod)
    assert sender.wait_idle(10)
    owner.wait_for(lambda rs: len([r for r in rs if r[0] == "finish_binding"]) == 3)
    assert published == [3]
    for uid, ns, name, node in pods:
        assert kube.pod(ns, name)["spec"]["nodeName"] == node


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


def test_retry_that_cannot_be_queued_forgets(worker, kube, owner, nodes, monkeypatch):
    def broker_down(*args, **kwargs):
        raise OSError("broker down")

    kube.faults.update(bind_failure_rate=1.0, bind_failure_code=500)
    monkeypatch.setattr(tasks.bind_pod, "apply_async", broker_down)   # the retry's path
    app.send_task(tasks.bind_pod.name, ("uid-p3", NS, "p3", nodes[0]))
    op, args, _ = settled(owner, "uid-p3")
    assert op == "forget" and "could not queue attempt 2: broker down" in args["reason"]


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


# -- fencing: a bind carries the lease term its pods were assumed under ------------------------

def lease_term_is(term):
    LeaseTerm.objects.update_or_create(pk=1, defaults={"term": term})


@pytest.mark.django_db
@pytest.mark.parametrize("term_now, posted", [(4, True), (5, False)])
def test_a_bind_is_posted_only_under_the_term_its_pod_was_assumed_in(
        kube, rclient, nodes, binds, term_now, posted):  # noqa: F811
    """A bind queued by an owner that lost its lease since (frozen, then woken) is for an
    assumption the new leader does not hold: no POST, and nobody told (a forget would
    reach the new leader, which may hold an assumption of its own for the pod)."""
    lease_term_is(term_now)
    one = tasks.bind_pod("uid-p4", NS, "p4", nodes[0], term=4)
    batch = tasks.bind_pods([["uid-p5", NS, "p5", nodes[1]], ["uid-p6", NS, "p6", nodes[2]]],
                            term=4)
    if posted:
        assert (one, batch) == ("finish", {"finish": 2, "forget": 0, "retry": 0})
        assert binds == ["p4", "p5", "p6"]
        assert [m["op"] for m in queued(rclient)] == ["finish_binding"] * 3
    else:
        assert (one, batch) == ("stale", {"stale": 2})
        assert binds == [] and queued(rclient) == []
        assert all(not kube.pod(NS, name)["spec"].get("nodeName")
                   for name in ("p4", "p5", "p6"))


def test_a_bind_whose_term_cannot_be_read_is_retried_then_forgotten(
        kube, rclient, nodes, binds, settings, monkeypatch):  # noqa: F811
    """Unproven is not stale: the database failing the term's read is a retry, and the
    last attempt's failure forgets the pod with the cause, posting nothing."""
    def down():
        raise OperationalError("the connection is closed")

    monkeypatch.setattr(LeaseTerm, "current", down)
    settings.SCHEDVIEW_BIND_ATTEMPTS = 1
    assert tasks.bind_pod("uid-p7", NS, "p7", nodes[0], term=4) == "forget"
    [msg] = queued(rclient)
    assert msg["op"] == "forget" and msg["args"]["uid"] == "uid-p7"
    assert "cannot read the lease's term: the connection is closed" in msg["args"]["reason"]
    assert binds == []


def test_the_owners_binds_carry_its_term(monkeypatch):
    """runner.publish_binds, the extender's path to the worker, names the term."""
    sent = []
    monkeypatch.setattr(app, "send_task", lambda name, **kw: sent.append((name, kw)))
    publish_binds([["u", NS, "p", "n"]], term=9)
    assert sent == [(tasks.bind_pods.name, {"args": ([["u", NS, "p", "n"]],),
                                            "kwargs": {"term": 9}})]
