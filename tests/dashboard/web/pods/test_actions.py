"""The actions: commands to a stand-in owner, binds through a real worker, audit rows."""
import logging
from types import SimpleNamespace

import pytest
from django.db import DatabaseError
from kombu.exceptions import OperationalError

from dashboard.celery import app as celery_app
from dashboard.models import AuditAction
from dashboard.web.pods import actions
from dashboard.wire.commands import CommandError, OwnerUnavailable
from dashboard.wire.tasks import BIND_POD
from tests.dashboard.owner.test_commands import ServerThread, rclient  # noqa: F401  (fixtures)
from tests.dashboard.worker.test_tasks import NS, cluster_data, kube, nodes, sim, worker  # noqa: F401

pytestmark = pytest.mark.django_db


def aggregates(pods):
    return {"pods": pods, "requested": {"cpu": 100 * pods}}


class FakeOwner(ServerThread):
    """Assumes the pods of test_tasks' cluster (uid-<name>) unless told to refuse."""

    def __init__(self, refuse=None):
        self.refuse = refuse or {}
        self.term = None          # the lease term its assumptions hold under
        super().__init__({"assume": self.assume, "forget": self.forget,
                          "expire": self.expire},
                         ops=("finish_binding",))

    def _refusal(self, key):
        if key in self.refuse:
            raise CommandError(*self.refuse[key])

    def assume(self, args, actor):
        self._refusal(args["name"])
        return {"uid": f"uid-{args['name']}", "namespace": args["namespace"],
                "name": args["name"], "node": args["node"],
                "before": aggregates(1), "after": aggregates(2), "term": self.term}

    def forget(self, args, actor):
        self._refusal(args["uid"])
        return {"uid": args["uid"], "changed": True, "node": "node-x"}

    def expire(self, args, actor):
        self._refusal(args["uid"])
        return {"uid": args["uid"], "changed": True, "node": "node-y"}


@pytest.fixture
def owner(rclient, request):  # noqa: F811
    refuse = getattr(request, "param", None)
    with FakeOwner(refuse) as o:
        yield o


def the_record():
    [record] = AuditAction.objects.all()
    return record


def celery_queue_length(rclient):  # noqa: F811
    return rclient.llen("celery")


# -- schedule ----------------------------------------------------------------------------------

def test_schedule_pod_assumes_binds_and_audits(worker, kube, owner, nodes):  # noqa: F811
    result = actions.schedule_pod(NS, "p0", nodes[1], actor="alice")
    assert result["uid"] == "uid-p0" and result["node"] == nodes[1]
    assert result["before"] == aggregates(1) and result["after"] == aggregates(2)
    assert result["task_id"]
    [(args, actor)] = owner.ops("assume")
    assert args == {"namespace": NS, "name": "p0", "node": nodes[1], "force": False} \
        and actor == "alice"
    # The bind went through Celery to the cluster, and the owner heard of it.
    owner.wait_for(lambda rs: ("finish_binding", {"uid": "uid-p0"}) in
                   [(op, {"uid": a.get("uid")}) for op, a, _ in rs])
    assert kube.pod(NS, "p0")["spec"]["nodeName"] == nodes[1]
    record = the_record()
    assert (record.actor, record.action, record.target, record.node, record.ok,
            record.message) == ("alice", "schedule", "uid-p0", nodes[1], True, "")
    assert record.details["task_id"] == result["task_id"]
    assert record.details["after"] == aggregates(2) and record.details["name"] == "p0"


def test_the_bind_carries_the_term_of_its_assumption(owner, monkeypatch):
    """The worker refuses the bind once another owner took the lease (test_tasks)."""
    queued = []
    monkeypatch.setattr(celery_app, "send_task",
                        lambda name, **kw: queued.append((name, kw)) or SimpleNamespace(id="t"))
    owner.term = 12
    actions.schedule_pod(NS, "p3", "node-a", actor="alice")
    assert queued == [(BIND_POD, {"args": ("uid-p3", NS, "p3", "node-a"),
                                  "kwargs": {"term": 12}})]


@pytest.mark.parametrize("owner", [{"p1": (409, "pod uid-p1 is already Assumed")}],
                         indirect=True)
def test_refused_schedule_raises_and_is_audited(owner, rclient):  # noqa: F811
    tasks_before = celery_queue_length(rclient)
    with pytest.raises(CommandError) as info:
        actions.schedule_pod(NS, "p1", "node-a", actor="bob")
    assert info.value.status == 409
    assert celery_queue_length(rclient) == tasks_before          # no bind queued
    record = the_record()
    assert (record.actor, record.action, record.target, record.node, record.ok) == (
        "bob", "schedule", f"{NS}/p1", "node-a", False)
    assert record.message == "pod uid-p1 is already Assumed"
    assert record.details["status"] == 409


def test_schedule_without_owner_is_503_and_audited(rclient):  # noqa: F811
    with pytest.raises(OwnerUnavailable):
        actions.schedule_pod(NS, "p2", "node-a", actor="carol", timeout=0.2)
    record = the_record()
    assert not record.ok and record.details["status"] == 503


def test_bind_that_cannot_be_queued_is_forgotten(owner, monkeypatch):
    def broker_down(*args, **kwargs):
        raise OperationalError("broker down")

    monkeypatch.setattr(celery_app, "send_task", broker_down)
    with pytest.raises(CommandError) as info:
        actions.schedule_pod(NS, "p3", "node-a", actor="dave")
    assert info.value.status == 503 and "broker down" in info.value.message
    owner.wait_for(lambda rs: any(op == "forget" for op, _, _ in rs))
    [(args, actor)] = owner.ops("forget")
    assert args["uid"] == "uid-p3" and args["node"] == "node-a" and actor == "dave"
    record = the_record()
    assert not record.ok and record.target == "uid-p3" and "broker down" in record.message


# -- forget and expire -------------------------------------------------------------------------

@pytest.mark.parametrize("action, op, node", [(actions.forget_pod, "forget", "node-x"),
                                              (actions.expire_pod, "expire", "node-y")])
def test_forget_and_expire(owner, action, op, node):
    result = action("uid-9", actor="frank")
    assert result == {"uid": "uid-9", "changed": True, "node": node}
    [(args, actor)] = owner.ops(op)
    assert args["uid"] == "uid-9" and actor == "frank"
    record = the_record()
    assert (record.actor, record.action, record.target, record.node, record.ok) == (
        "frank", op, "uid-9", node, True)
    assert record.details["result"] == result


@pytest.mark.parametrize("owner", [{"uid-9": (409, "pod uid-9 is Added, not Assumed")}],
                         indirect=True)
@pytest.mark.parametrize("action, op", [(actions.forget_pod, "forget"),
                                        (actions.expire_pod, "expire")])
def test_refused_forget_and_expire_are_audited(owner, action, op):
    with pytest.raises(CommandError) as info:
        action("uid-9", actor="grace")
    assert info.value.status == 409
    record = the_record()
    assert (record.action, record.target, record.ok, record.message) == (
        op, "uid-9", False, "pod uid-9 is Added, not Assumed")


def test_forget_reason_defaults_to_the_actor(owner):
    actions.forget_pod("uid-9", actor="heidi")
    actions.forget_pod("uid-9", actor="heidi", reason="node drained")
    assert [a["reason"] for a, _ in owner.ops("forget")] == ["forgotten by heidi",
                                                              "node drained"]


def test_audit_failure_does_not_hide_the_outcome(owner, monkeypatch, caplog):
    def fail(*args, **kwargs):
        raise DatabaseError("disk full")

    monkeypatch.setattr(AuditAction.objects, "bulk_create", fail)
    with caplog.at_level(logging.ERROR, actions.__name__):
        assert actions.expire_pod("uid-9", actor="ivan")["changed"] is True
    assert any("audit" in r.getMessage() for r in caplog.records)
