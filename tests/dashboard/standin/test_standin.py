"""kube-scheduler's stand-in against a served simulated cluster and a fake extender that
answers as the captures' recording extender did (fake_extender.py)."""
import logging
from datetime import timedelta

import pytest

from simcluster import SimCluster
from simcluster.generate import BASE_TIME, Cluster, make_node, make_pod

from dashboard.standin import standin
from dashboard.kube.client import read_json
from dashboard.standin.standin_view import RELIST_PERIOD, ClusterView, PendingPod, VictimFacts
from tests.dashboard.standin.fake_extender import running_stand_in, settle
from tests.live.livestack import free_port
from tests.scheduling import why_pending

NS = "team"
HIGH, LOW = 100_000, 100
SMALL = {"cpu": "4", "memory": "8Gi", "pods": "20"}
NOW = 1_000_000.0


def later(seconds):
    return BASE_TIME + timedelta(seconds=seconds)


def node(name, zone, **kwargs):
    return make_node(name, zone=zone, allocatable=SMALL, **kwargs)


def low(name, node_name, cpu="900m", **kwargs):
    return make_pod(name, namespace=NS, uid=f"uid-{name}", node_name=node_name,
                    requests={"cpu": cpu}, priority=LOW, **kwargs)


def pending(name, cpu="500m", created=1, **kwargs):
    return make_pod(name, namespace=NS, uid=f"uid-{name}", requests={"cpu": cpu},
                    created=later(created), **kwargs)


def served(cluster):
    return SimCluster(cluster=cluster, kubelet=False, namespaces=1)


@pytest.fixture
def world(request):
    """(sim, v1, extender, scheduler) over the cluster the test parametrizes."""
    with served(request.param) as sim, running_stand_in(sim) as running:
        yield (sim, *running)


def pod_of(v1, name):
    return v1.read_namespaced_pod(name, NS)


# --- (a) kube-scheduler's own filters first, then filter with the nodes that passed -----------

FILTER_CLUSTER = Cluster(
    nodes=[node("a-1", "zone-a"), node("a-2", "zone-a"), node("b-1", "zone-b"),
           node("b-2", "zone-b", taints=[{"key": "dedicated", "value": "infra",
                                          "effect": "NoSchedule"}]),
           node("c-1", "zone-c", labels={"disk": "ssd"})],
    pods=[low("full-a-2", "a-2", cpu="3800m"),
          pending("anywhere", created=1),
          pending("on-ssd", created=2, node_selector={"disk": "ssd"})])


@pytest.mark.parametrize("world", [FILTER_CLUSTER], indirect=True, ids=["filter"])
def test_filter_gets_only_the_nodes_its_own_plugins_pass_in_zone_order(world):
    """01 fits-1, fits-3: filter is sent the nodes that passed kube-scheduler's own plugins
    (no full node, no untolerated taint; only the selector's node), zone-interleaved."""
    sim, v1, extender, scheduler = world
    settle(scheduler.view, lambda: len(scheduler.view.pending) == 2, "the pending pods")
    counts = scheduler.period(now=NOW)
    assert counts == {"bind": 2, "wait": 0, "preempt": 0, "error": 0, "victims": 0}
    filters = {name: body["NodeNames"] for verb, name, body in extender.calls
               if verb == "filter"}
    assert filters == {"anywhere": ["a-1", "b-1", "c-1"], "on-ssd": ["c-1"]}
    assert extender.verbs() == [("filter", "anywhere"), ("bind", "anywhere"),
                                ("filter", "on-ssd"), ("bind", "on-ssd")]
    assert pod_of(v1, "anywhere").spec.node_name == "a-1"
    assert pod_of(v1, "on-ssd").spec.node_name == "c-1"


# --- (b) preempt for a pod never filtered, nominate, evict gracefully, wait, bind -----------

PREEMPT_CLUSTER = Cluster(
    nodes=[node("a-1", "zone-a"), node("b-1", "zone-b")],
    pods=[low("low-a-0", "a-1"), low("low-a-1", "a-1"), low("low-a-2", "a-1"),
          low("low-a-3", "a-1"),
          low("low-b-0", "b-1", cpu="1900m"), low("low-b-1", "b-1"), low("low-b-2", "b-1"),
          make_pod("high", namespace=NS, uid="uid-high", requests={"cpu": "2"},
                   priority=HIGH, created=later(1))])


@pytest.mark.parametrize("world", [PREEMPT_CLUSTER], indirect=True, ids=["preempt"])
def test_a_pod_that_fits_nowhere_preempts_then_binds_on_its_nominated_node(world):
    """03a: preempt (MetaVictims, each node's own minimal victims) for a pod never filtered;
    nominatedNodeName written, victims deleted gracefully; nothing while one is still
    terminating; once they are gone, filter with the nominated node only, then bind."""
    sim, v1, extender, scheduler = world
    settle(scheduler.view, lambda: "uid-high" in scheduler.view.pending, "the pending pod")
    counts = scheduler.period(now=NOW)
    assert counts == {"bind": 0, "wait": 0, "preempt": 1, "error": 0, "victims": 1}
    assert extender.verbs() == [("preempt", "high")]
    sent = extender.calls[0][2]
    assert sent["NodeNameToVictims"] is None
    # a-1: 3.6 of 4 cpu used by four 900m pods: two must go. b-1: the 1900m pod alone.
    assert {n: sorted(v["UID"] for v in victims["Pods"])
            for n, victims in sent["NodeNameToMetaVictims"].items()} == {
        "a-1": ["uid-low-a-0", "uid-low-a-1"], "b-1": ["uid-low-b-0"]}
    # The echoed answer: b-1 has the fewest victims.
    high = pod_of(v1, "high")
    assert high.status.nominated_node_name == "b-1" and high.spec.node_name is None
    condition = next(c for c in high.status.conditions if c.type == "PodScheduled")
    assert (condition.status, condition.reason, condition.message) == (
        "False", "Unschedulable", "0/2 nodes are available: 2 Insufficient cpu.")
    victim = pod_of(v1, "low-b-0")
    assert victim.metadata.deletion_timestamp is not None
    assert victim.metadata.deletion_grace_period_seconds == 30
    assert [(c.type, c.reason) for c in victim.status.conditions
            if c.type == "DisruptionTarget"] == [("DisruptionTarget", "PreemptionByScheduler")]
    assert pod_of(v1, "low-a-0").metadata.deletion_timestamp is None

    # Another pod's deletion wakes it: not eligible while its victim is terminating.
    v1.delete_namespaced_pod("low-a-3", NS, grace_period_seconds=0)
    settle(scheduler.view, lambda: not scheduler.view.holds("uid-low-a-3"), "low-a-3 go")
    assert scheduler.period(now=NOW + 20)["wait"] == 1
    assert extender.verbs() == [("preempt", "high")]
    message = next(c for c in pod_of(v1, "high").status.conditions
                   if c.type == "PodScheduled").message
    # 03a's words: "0/5 nodes are available: 5 Insufficient cpu. no new claims to
    # deallocate, preemption: not eligible due to a terminating pod on the nominated node."
    assert message.endswith("no new claims to deallocate, preemption: not eligible due to a "
                            "terminating pod on the nominated node.")

    # The kubelet finishes the victim (as the captures' stand-in did, with grace 0).
    v1.delete_namespaced_pod("low-b-0", NS, grace_period_seconds=0)
    settle(scheduler.view, lambda: not scheduler.view.holds("uid-low-b-0"), "the victim go")
    counts = scheduler.period(now=NOW + 40)
    assert counts["bind"] == 1
    assert extender.verbs()[1:] == [("filter", "high"), ("bind", "high")]
    assert extender.calls[1][2]["NodeNames"] == ["b-1"]
    assert extender.calls[1][2]["Pod"]["status"]["nominatedNodeName"] == "b-1"
    high = pod_of(v1, "high")
    assert (high.spec.node_name, high.status.nominated_node_name) == ("b-1", None)
    assert pod_of(v1, "low-a-0").metadata.deletion_timestamp is None


@pytest.mark.parametrize("world", [PREEMPT_CLUSTER], indirect=True, ids=["preempt"])
def test_preempt_may_restrict_the_nodes_and_an_empty_answer_preempts_nothing(world):
    """03c: only the nodes answered are candidates: nominated there, victims there."""
    sim, v1, extender, scheduler = world
    settle(scheduler.view, lambda: "uid-high" in scheduler.view.pending, "the pending pod")
    extender.answers["preempt"] = lambda body: (200, {"NodeNameToMetaVictims": {
        "a-1": body["NodeNameToMetaVictims"]["a-1"]}})
    assert scheduler.period(now=NOW)["victims"] == 2
    assert pod_of(v1, "high").status.nominated_node_name == "a-1"
    assert {p.metadata.name for p in v1.list_namespaced_pod(NS).items
            if p.metadata.deletion_timestamp} == {"low-a-0", "low-a-1"}


@pytest.mark.parametrize("world", [PREEMPT_CLUSTER], indirect=True, ids=["preempt"])
def test_an_empty_preempt_answer_leaves_the_pod_waiting_for_a_cluster_change(world):
    """03d: {} means no preemption; no timed retry but the 5-minute flush (07)."""
    sim, v1, extender, scheduler = world
    settle(scheduler.view, lambda: "uid-high" in scheduler.view.pending, "the pending pod")
    extender.answers["preempt"] = lambda body: (200, {"NodeNameToMetaVictims": {}})
    assert scheduler.period(now=NOW)["wait"] == 1
    assert not [p for p in v1.list_namespaced_pod(NS).items if p.metadata.deletion_timestamp]
    assert pod_of(v1, "high").status.nominated_node_name is None
    assert scheduler.period(now=NOW + 60) == dict.fromkeys(standin.OUTCOMES, 0)
    assert scheduler.period(now=NOW + 301)["wait"] == 1       # the 5-minute flush (07)
    assert extender.verbs() == [("preempt", "high")] * 2


PICK_CLUSTER = Cluster(
    nodes=[node("a-1", "zone-a"), node("b-1", "zone-b")],
    pods=[make_pod("mid", namespace=NS, uid="uid-mid", node_name="a-1",
                   requests={"cpu": "3800m"}, priority=500),
          *(low(f"cheap-{i}", "b-1", cpu="1200m") for i in range(3)),
          make_pod("high", namespace=NS, uid="uid-high", requests={"cpu": "2"},
                   priority=HIGH, created=later(1))])


@pytest.mark.parametrize("world", [PICK_CLUSTER], indirect=True, ids=["pick"])
def test_the_node_picked_has_the_lowest_priority_victims_before_the_fewest(world):
    """kube-scheduler's pickOneNodeForPreemption: two victims of priority 100 on b-1 go
    rather than one of priority 500 on a-1."""
    sim, v1, extender, scheduler = world
    settle(scheduler.view, lambda: "uid-high" in scheduler.view.pending, "the pending pod")
    assert scheduler.period(now=NOW)["victims"] == 2
    sent = extender.calls[0][2]["NodeNameToMetaVictims"]
    assert {n: len(v["Pods"]) for n, v in sent.items()} == {"a-1": 1, "b-1": 2}
    assert pod_of(v1, "high").status.nominated_node_name == "b-1"
    assert pod_of(v1, "mid").metadata.deletion_timestamp is None


NO_VICTIMS_CLUSTER = Cluster(
    nodes=[node("a-1", "zone-a")],
    pods=[make_pod("peer", namespace=NS, uid="uid-peer", node_name="a-1",
                   requests={"cpu": "3800m"}, priority=HIGH),
          make_pod("high", namespace=NS, uid="uid-high", requests={"cpu": "2"},
                   priority=HIGH, created=later(1))])


@pytest.mark.parametrize("world", [NO_VICTIMS_CLUSTER], indirect=True, ids=["no"])
def test_preempt_is_not_called_without_candidates(world):
    """02 rej-2, 07 noop-2: no node where evicting lower-priority pods makes room."""
    sim, v1, extender, scheduler = world
    settle(scheduler.view, lambda: "uid-high" in scheduler.view.pending, "the pending pod")
    assert scheduler.period(now=NOW)["wait"] == 1
    assert extender.calls == []
    message = next(c for c in pod_of(v1, "high").status.conditions
                   if c.type == "PodScheduled").message
    assert message == ("0/1 nodes are available: 1 Insufficient cpu. no new claims to "
                       "deallocate, preemption: 0/1 nodes are available: 1 No preemption "
                       "victims found for incoming pod.")


# --- (c) one pod's failure backs off that pod alone ------------------------------------------

BACKOFF_CLUSTER = Cluster(
    nodes=[node("a-1", "zone-a"), node("b-1", "zone-b")],
    pods=[pending("unlucky", created=1), pending("second", created=2),
          pending("third", created=3)])


@pytest.mark.parametrize("world", [BACKOFF_CLUSTER], indirect=True, ids=["backoff"])
def test_a_bind_error_backs_off_that_pod_while_the_others_are_placed(world, caplog):
    """05a: a bind answered with an Error is a failed attempt: the assumption is forgotten,
    the pod backs off 1, 2, 4 s after each failure, and is retried from filter."""
    sim, v1, extender, scheduler = world
    settle(scheduler.view, lambda: len(scheduler.view.pending) == 3, "the pending pods")
    refusals = iter(range(3))

    def bind(body):
        if body["PodName"] == "unlucky" and next(refusals, None) is not None:
            return 200, {"Error": "extender: cannot bind now"}
        return None
    extender.answers["bind"] = bind
    with caplog.at_level(logging.DEBUG, logger="dashboard.standin.standin"):
        counts = scheduler.period(now=NOW)
    assert counts == {"bind": 2, "wait": 0, "preempt": 0, "error": 1, "victims": 0}
    # The extender's own refusal: the owner logged why; the console says it once, so here
    # only that it backs off, below the stand-in's INFO level.
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("DEBUG", "1 pod(s) refused by the extender back off")]
    assert pod_of(v1, "second").spec.node_name and pod_of(v1, "third").spec.node_name
    condition = next(c for c in pod_of(v1, "unlucky").status.conditions
                     if c.type == "PodScheduled")
    assert (condition.reason, condition.message) == ("SchedulerError",
                                                     "extender: cannot bind now")
    settle(scheduler.view, lambda: list(scheduler.view.pending) == ["uid-unlucky"],
           "the others bound")
    # The assumption was forgotten: only the two bound pods' cpu counts.
    assert sum(r.free_cpu for r in scheduler.view.algorithm.records.ordered) == 8000 - 1000

    tried_at = []
    for now in [NOW + s / 2 for s in range(1, 30)]:
        if scheduler.period(now=now)["error"] or pod_of(v1, "unlucky").spec.node_name:
            tried_at.append(now - NOW)
        if pod_of(v1, "unlucky").spec.node_name:
            break
    assert tried_at == [1.0, 3.0, 7.0]          # 1, 2, then 4 s after each failure
    assert [v for v, name in extender.verbs("unlucky")] == ["filter", "bind"] * 4


@pytest.mark.parametrize("world", [BACKOFF_CLUSTER], indirect=True, ids=["backoff"])
def test_a_pod_the_extender_filters_out_is_unschedulable_and_tried_once_more(world):
    """02 rej-2: no node kept is Unschedulable with the extender's reasons, and preemption
    finds no victims (FailedAndUnresolvableNodes are not even candidates); the pod's own
    status write brings exactly one more attempt, then it waits for a cluster change."""
    sim, v1, extender, scheduler = world
    settle(scheduler.view, lambda: len(scheduler.view.pending) == 3, "the pending pods")
    extender.answers["filter"] = lambda body: (200, {
        "NodeNames": [], "FailedNodes": {"a-1": "extender: busy"},
        "FailedAndUnresolvableNodes": {"b-1": "extender: forbidden"}}) \
        if body["Pod"]["metadata"]["name"] == "unlucky" else None
    assert scheduler.period(now=NOW) == {"bind": 2, "wait": 1, "preempt": 0, "error": 0,
                                         "victims": 0}
    condition = next(c for c in pod_of(v1, "unlucky").status.conditions
                     if c.type == "PodScheduled")
    assert (condition.reason, condition.message) == (
        "Unschedulable", "0/2 nodes are available: 1 extender: busy, 1 extender: forbidden. "
        "no new claims to deallocate, preemption: 0/2 nodes are available: 1 No preemption "
        "victims found for incoming pod, 1 Preemption is not helpful for scheduling.")
    settle(scheduler.view,
           lambda: scheduler.view.pending["uid-unlucky"].thaw()["status"].get("conditions"),
           "its status write")
    assert scheduler.period(now=NOW + 0.5)["wait"] == 1
    assert scheduler.period(now=NOW + 60) == dict.fromkeys(standin.OUTCOMES, 0)
    assert [verb for verb, name in extender.verbs("unlucky")] == ["filter", "filter"]


@pytest.mark.parametrize("world", [BACKOFF_CLUSTER], indirect=True, ids=["backoff"])
def test_errors_of_every_kind_are_failed_attempts(world):
    """05b (500), 05e (refused), 06a (filter Error), 02 rej-4 (a node not sent), and the
    extender's 400 for a pod it has not seen yet: each backs the pod off."""
    sim, v1, extender, scheduler = world
    settle(scheduler.view, lambda: len(scheduler.view.pending) == 3, "the pending pods")
    extender.answers["filter"] = lambda body: {
        "unlucky": (500, {"Error": "boom"}),
        "second": (200, {"NodeNames": ["z-9"]}),
        "third": (400, {"Error": "unknown to the extender"})}[body["Pod"]["metadata"]["name"]]
    assert scheduler.period(now=NOW)["error"] == 3
    extender.answers["filter"] = lambda body: (200, {"Error": "extender: not ready"})
    assert scheduler.period(now=NOW + 1.5)["error"] == 3
    assert scheduler.period(now=NOW + 2) == dict.fromkeys(standin.OUTCOMES, 0)
    extender.answers.clear()
    dead = standin.HttpDoor(f"127.0.0.1:{free_port()}", 2.0)
    scheduler.door, live = dead, scheduler.door
    assert scheduler.period(now=NOW + 4)["error"] == 3       # connection refused
    scheduler.door = live
    assert scheduler.period(now=NOW + 8.5)["bind"] == 3


@pytest.mark.parametrize("world", [BACKOFF_CLUSTER], indirect=True, ids=["backoff"])
def test_a_refused_binding_is_an_error_and_binds_once_the_refusal_lifts(world):
    """The simulated cluster refuses Bindings as an admission policy does (403); the
    extender answers the API server's reason as the Error, the pod backs off and binds
    once the policy is gone."""
    sim, v1, extender, scheduler = world
    settle(scheduler.view, lambda: len(scheduler.view.pending) == 3, "the pending pods")
    sim.faults.update(binding_refused_namespaces=NS)
    assert scheduler.period(now=NOW)["error"] == 3
    condition = next(c for c in pod_of(v1, "unlucky").status.conditions
                     if c.type == "PodScheduled")
    assert condition.reason == "SchedulerError"
    assert condition.message.startswith('pods "unlucky" is forbidden: ValidatingAdmissionPolicy')
    sim.faults.update(binding_refused_namespaces="")
    assert scheduler.period(now=NOW + 1)["bind"] == 3


# --- the process: manage.py standin ---------------------------------------------------------

@pytest.mark.parametrize("options, error", [
    ({}, "SCHEDVIEW_EXTENDER_ADDRESS is empty"),
    ({"address": "127.0.0.1:1", "period": 0}, "must be positive"),
    ({"address": "127.0.0.1:1", "limit": -1}, "must be positive"),
])
def test_the_command_refuses_to_run_without_an_extender_or_with_bad_options(settings, options,
                                                                           error):
    from django.core.management import CommandError, call_command
    settings.SCHEDVIEW_EXTENDER_ADDRESS = options.pop("address", "")
    with pytest.raises(CommandError, match=error):
        call_command("standin", **options)


VIEW_CLUSTER = Cluster(nodes=[node("a-1", "zone-a")],
                       pods=[low("done-soon", "a-1", cpu="3")])


@pytest.mark.parametrize("world", [VIEW_CLUSTER], indirect=True, ids=["view"])
def test_the_view_frees_a_finished_pod_and_counts_it_as_a_cluster_change(world):
    """kube-scheduler's cache drops a pod that finished; pods waiting for room wake up."""
    sim, v1, extender, scheduler = world
    view = scheduler.view
    settle(scheduler.view, lambda: view.holds("uid-done-soon"), "the bound pod")
    assert view.algorithm.records.by_name["a-1"].free_cpu == 1000
    changes = view.changes
    v1.patch_namespaced_pod_status("done-soon", NS, {"status": {"phase": "Succeeded"}})
    settle(scheduler.view, lambda: view.changes > changes, "the pod finish")
    assert view.algorithm.records.by_name["a-1"].free_cpu == 4000
    assert view.pending == {}


@pytest.mark.parametrize("world", [VIEW_CLUSTER], indirect=True, ids=["view"])
def test_the_view_relists_so_a_lost_watch_event_hides_no_pod_for_good(world):
    """The simulated cluster's lost-event fault hides a created pod from watchers."""
    sim, v1, extender, scheduler = world
    clock = [0.0]
    view = ClusterView(v1, clock=lambda: clock[0], watch_timeout=30).start()
    try:
        settle(view, lambda: view.holds("uid-done-soon"), "the bound pod")
        sim.faults.update(lose_event_rate=1.0)
        v1.create_namespaced_pod(NS, pending("unseen"))
        sim.faults.update(lose_event_rate=0.0)
        v1.create_namespaced_pod(NS, pending("seen"))
        settle(view, lambda: len(view.pending) == 1, "the pod whose event was sent")
        assert [p.thaw()["metadata"]["name"] for p in view.pending.values()] == ["seen"]
        clock[0] = RELIST_PERIOD
        settle(view, lambda: len(view.pending) == 2, "the pod whose event was lost")
    finally:
        view.stop()


# --- (e) kube-scheduler v1.36.2's words, as why-pending/cases.json recorded them ----------------

# The cases the stand-in's own filters decide (inter-pod affinity, spread and volumes are
# left to the extender, and preempt-helps is placed).
WORDED = ["cpu", "memory", "cpu-and-memory", "ephemeral-storage", "gpu-tolerated",
          "gpu-untolerated", "selector", "selector-tiny", "required-affinity", "host-port",
          "preempt-cannot", "missing-pvc"]


def why_pending_cluster(case):
    pod = why_pending.pending(case)     # as created: the API server's fields added here
    pod["metadata"].update(resourceVersion="1", creationTimestamp=later(1).isoformat())
    pod.setdefault("status", {"phase": "Pending"})
    return Cluster(nodes=[why_pending.node(n) for n in why_pending.CASES["nodes_before"]],
                   pods=why_pending.placed_pods() + [pod])


@pytest.mark.parametrize("world, case", [(why_pending_cluster(why_pending.BY_NAME[name]),
                                          why_pending.BY_NAME[name]) for name in WORDED],
                         indirect=["world"], ids=WORDED)
def test_the_pod_scheduled_condition_says_what_kube_scheduler_v1_36_2_said(world, case):
    """The capture shared/k8s-wire/why-pending/cases.json: the stand-in writes the
    PodScheduled condition kube-scheduler wrote for the same pod on the same nodes, word
    for word ("N node(s) had untolerated taint(s)", "no new claims to deallocate,
    preemption: ...")."""
    sim, v1, extender, scheduler = world
    uid = f"uid-{case['pod']['metadata']['name']}"
    settle(scheduler.view, lambda: uid in scheduler.view.pending, "the case's pod")
    assert scheduler.period(now=NOW)["wait"] == 1
    assert extender.calls == []        # no node passed, and no eviction would help
    recorded = case["pod_scheduled"]
    condition = next(c for c in pod_of_ns(v1, case["pod"]["metadata"]).status.conditions
                     if c.type == "PodScheduled")
    assert (condition.status, condition.reason, condition.message) == (
        recorded["status"], recorded["reason"], recorded["message"])


def pod_of_ns(v1, metadata):
    return v1.read_namespaced_pod(metadata["name"], metadata["namespace"])


MISSING_PVC = why_pending.BY_NAME["missing-pvc"]
MISSING_UID = f"uid-{MISSING_PVC['pod']['metadata']['name']}"


@pytest.mark.parametrize("world", [why_pending_cluster(MISSING_PVC)], indirect=True,
                         ids=["missing-pvc"])
def test_a_pod_whose_claim_comes_later_is_bound_then(world):
    """kube-scheduler requeues an unschedulable pod when a claim is added: once the claim
    exists VolumeBinding lets it through and the filters place it."""
    sim, v1, extender, scheduler = world
    view = scheduler.view
    settle(view, lambda: MISSING_UID in view.pending, "the case's pod")
    assert scheduler.period(now=NOW)["wait"] == 1 and extender.calls == []
    v1.create_namespaced_persistent_volume_claim("why", {
        "metadata": {"name": "no-such-claim"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
    settle(view, lambda: ("why", "no-such-claim") in view.claims, "the claim")
    assert scheduler.period(now=NOW + 600)["bind"] == 1
    assert extender.verbs()[0] == ("filter", "case-missing-pvc")


def test_a_stand_in_the_claims_are_forbidden_to_schedules_without_them():
    """A 403 on the claims (the simulated cluster's RBAC knob) does not hold the stand-in:
    it schedules as before, the claims unchecked."""
    with served(why_pending_cluster(MISSING_PVC)) as sim:
        sim.faults.update(forbidden_resources="persistentvolumeclaims")
        with running_stand_in(sim) as (v1, extender, scheduler):
            view = scheduler.view
            settle(view, lambda: view.sync() and MISSING_UID in view.pending,
                   "the pods, the claims forbidden")
            assert not view.claims.known
            assert scheduler.period(now=NOW)["bind"] == 1


@pytest.fixture
def demo_world(request):
    """As `world`, the stand-in leaving the demo's FPGA to the extender (settings'
    SCHEDVIEW_STANDIN_IGNORED_RESOURCES default)."""
    with served(request.param) as sim, \
            running_stand_in(sim, frozenset({"example.com/fpga"})) as running:
        yield (sim, *running)


GPU_CASE = why_pending.BY_NAME["gpu-tolerated"]


@pytest.mark.parametrize("demo_world", [why_pending_cluster(GPU_CASE)], indirect=True,
                         ids=["gpu-tolerated"])
def test_the_demos_gpu_job_is_worded_as_kube_scheduler_words_it(demo_world):
    """The demo's 64-GPU job (launcher/demo_scenes.py) with the demo's settings: a resource
    left to the extender that the pod does not ask for changes nothing in its words
    (why-pending/cases.json, gpu-tolerated)."""
    sim, v1, extender, scheduler = demo_world
    settle(scheduler.view, lambda: "uid-case-gpu-tolerated" in scheduler.view.pending,
           "the case's pod")
    assert scheduler.period(now=NOW)["wait"] == 1
    condition = next(c for c in pod_of_ns(v1, GPU_CASE["pod"]["metadata"]).status.conditions
                     if c.type == "PodScheduled")
    assert condition.message == GPU_CASE["pod_scheduled"]["message"]


@pytest.mark.parametrize("watch_list", [False, True], ids=["paged-list", "watch-list"])
@pytest.mark.parametrize("world", [VIEW_CLUSTER], indirect=True, ids=["view"])
def test_the_view_keeps_a_bound_pod_as_its_digest_and_a_pending_pod_frozen(world, watch_list):
    """Issue 26: the stand-in holds no whole pod (listed, or watched), yet counts a bound
    one on its node as before, and thaws a pending one as the API server sent it."""
    sim, v1, extender, scheduler = world
    view = ClusterView(v1, watch_timeout=30, watch_list=watch_list).start()
    try:
        settle(view, lambda: view.holds("uid-done-soon"), "the listed pod")
        watched = v1.create_namespaced_pod(NS, low("watched", "a-1", cpu="1")).metadata.uid
        waiting = v1.create_namespaced_pod(NS, pending("waiting")).metadata.uid
        settle(view, lambda: view.holds(watched) and waiting in view.pending, "the watched pods")
        for uid in ("uid-done-soon", watched):   # held as the cache's digest alone
            assert uid not in view.held
            assert view.cache.pod_info(uid).node_name == "a-1"
        # its start time as a number, read back as the API server wrote it
        assert isinstance(view.started["uid-done-soon"], int)
        listed = read_json(v1.read_namespaced_pod("done-soon", NS, _preload_content=False))
        assert view.victim_facts("uid-done-soon") == VictimFacts(listed["status"]["startTime"],
                                                                 False, False)
        assert view.algorithm.records.by_name["a-1"].free_cpu == 0
        assert view.held[waiting] is view.pending[waiting]
        assert isinstance(view.pending[waiting], PendingPod)
        assert view.pending[waiting].thaw() == read_json(
            v1.read_namespaced_pod("waiting", NS, _preload_content=False))
        v1.delete_namespaced_pod("watched", NS, grace_period_seconds=0)
        settle(view, lambda: not view.holds(watched), "the deletion")
        assert watched not in view.started
        assert view.algorithm.records.by_name["a-1"].free_cpu == 1000
    finally:
        view.stop()
