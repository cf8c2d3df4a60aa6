"""The live feed end to end, every part a real process on real Redis and the test database:
the cluster's pods reach the cache; binds through Celery confirm, fail into forgetting, or
expire when their confirmation is lost; dropped watches and 410s lose nothing; a standby
owner takes over from a dead one; kube-scheduler's extender calls place and bind a pod."""

import sys

import pytest
from kubernetes import client, config

from dashboard.clients.owner_client import send
from dashboard.models import ComparerRun, Transition
from tests.live.livestack import new_pod, owner_status, state_of, synced_owner
from tests.waiting import wait_for

pytestmark = pytest.mark.timeout(240)


def core(stack):
    return client.CoreV1Api(config.new_client_from_config(
        config_file=stack.env["SCHEDVIEW_KUBECONFIG"]))


def a_node(api):
    return api.list_node().items[0].metadata.name


def kinds(uid):
    return list(Transition.objects.filter(key=uid).values_list("kind", flat=True))


def owned_pending_pod(stack, name):
    """Start an owner, wait for its sync, create an unbound pod and wait for it to be seen."""
    stack.owner("owner-a")
    synced_owner()
    api = core(stack)
    uid = new_pod(api, name)
    wait_for(lambda: state_of(uid) == "Pending", 30, "the pending pod")
    return api, uid


def schedule(name, node):
    from dashboard.web.pods.actions import schedule_pod
    return schedule_pod("default", name, node, actor="test")


def test_pods_created_in_the_cluster_reach_the_cache(stack):
    stack.owner("owner-a")
    synced_owner()
    api = core(stack)
    node = a_node(api)
    pending, bound = new_pod(api, "waits"), new_pod(api, "runs", node=node)
    wait_for(lambda: state_of(pending) == "Pending", 30, "the pending pod")
    wait_for(lambda: state_of(bound) == "Added", 30, "the bound pod")
    api.delete_namespaced_pod("runs", "default", grace_period_seconds=0)
    wait_for(lambda: state_of(bound) == "gone", 30, "the deleted pod to leave")


def test_a_bind_that_succeeds_is_confirmed_by_the_watch(stack):
    api, uid = owned_pending_pod(stack, "to-bind")
    result = schedule("to-bind", a_node(api))
    assert result["uid"] == uid
    wait_for(lambda: state_of(uid) == "Added", 60, "the confirmation")
    assert api.read_namespaced_pod("to-bind", "default").spec.node_name == result["node"]
    wait_for(lambda: "pod_confirmed" in kinds(uid), 30, "the history")
    # The watch may confirm before the bind task's finish_binding arrives (then a no-op).
    assert kinds(uid)[0] == "pod_assumed"
    assert set(kinds(uid)) <= {"pod_assumed", "pod_binding_finished", "pod_confirmed"}


def test_a_bind_that_keeps_failing_is_forgotten(stack):
    api, uid = owned_pending_pod(stack, "unlucky")
    stack.control("faults", {"bind_failure_rate": 1.0, "bind_failure_code": 500})
    schedule("unlucky", a_node(api))
    wait_for(lambda: "pod_forgotten" in kinds(uid), 60, "the pod to be forgotten")
    assert state_of(uid) == "Pending"
    assert api.read_namespaced_pod("unlucky", "default").spec.node_name is None


def test_a_lost_confirmation_expires_and_the_comparer_heals_the_miss(stack):
    api, uid = owned_pending_pod(stack, "unconfirmed")
    # No later kubelet update may deliver the pod again: only the comparer can heal the miss.
    stack.control("kubelet", {"start_pods": False})
    stack.control("faults", {"lose_event_rate": 1.0})
    schedule("unconfirmed", a_node(api))
    wait_for(lambda: "pod_expired" in kinds(uid), 60, "the expiry after the ttl")
    stack.control("faults", {"lose_event_rate": 0.0})
    assert api.read_namespaced_pod("unconfirmed", "default").spec.node_name
    send("compare", {}, timeout=5)
    run = wait_for(lambda: ComparerRun.objects.order_by("-at").first(), 60, "a comparison")
    assert uid in run.report["missed_pods"]
    wait_for(lambda: state_of(uid) == "Added", 60, "the repair the drift asks for")


def test_dropped_watches_and_410s_lose_nothing(stack):
    stack.owner("owner-a")
    synced_owner()
    stack.control("churn", {"rate": 40, "scheduler": True})
    wait_for(lambda: owner_status()["applied"] > 100, 60, "churn reaching the owner")
    stack.control("drop-watches", {"abrupt": True})
    stack.control("compact")
    stack.control("drop-watches", {"abrupt": False})
    applied = owner_status()["applied"]
    wait_for(lambda: owner_status()["applied"] > applied + 50, 60, "the feed to resume")
    stack.control("churn", {"rate": 0})
    synced_owner()
    ComparerRun.objects.all().delete()
    send("compare", {}, timeout=5)
    run = wait_for(lambda: ComparerRun.objects.first(), 60, "a comparison")
    assert run.clean, run.report


def test_a_standby_owner_takes_over_when_the_owner_dies(stack):
    stack.owner("owner-a")
    first = synced_owner()
    stack.owner("owner-b")
    wait_for(lambda: "waiting for the leader lease" in stack.log("owner-b"), 30, "the standby")
    stack.stop("owner-a", sig="kill")
    taken = wait_for(lambda: "leader; owning the cache" in stack.log("owner-b"), 30,
                     "the standby to take over")
    assert taken
    second = synced_owner()
    assert second["seq"] >= first["seq"]
    assert second["pods"] == first["pods"] or second["pods"] > 0


def extender_state(uid):
    return send("extender_status", {"uid": uid}, timeout=5)["state"]


def test_the_embedded_scheduler_places_pending_pods_until_they_run(stack):
    stack.owner("owner-a")
    synced_owner()
    stack.extender()
    api = core(stack)
    uids = [new_pod(api, f"queued-{i}") for i in range(3)]
    wait_for(lambda: all(state_of(u) == "Pending" for u in uids), 30, "the pending pods")
    # The stand-in's own process, on the stack's cluster, calling the owner's listener over
    # HTTP as kube-scheduler does.
    stack.start("standin", [sys.executable, "manage.py", "standin", "--period", "0.2"])
    wait_for(lambda: all(state_of(u) == "Added" for u in uids), 60, "the pods to be bound")
    wait_for(lambda: all(extender_state(u) == "Bound" for u in uids), 30,
             "the extender's statuses to say Bound")
    assert all(api.read_namespaced_pod(f"queued-{i}", "default").spec.node_name
               for i in range(3))
