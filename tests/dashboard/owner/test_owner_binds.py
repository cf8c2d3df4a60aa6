"""Binds that never finish: an assumed pod is stuck from the moment it was assumed, and is
forgotten at the bind deadline (audited, with its cause), whatever else changes meanwhile.
The comparer counts overdue binds as drift and records comparisons it could not make."""
import pytest

from dashboard.models import AuditAction, ComparerRun, PodRecord, Transition
from dashboard.owner.changes import BIND_DEADLINE_CAUSE
from dashboard.owner.comparing import CompareFailed
from tests.dashboard.owner.owned import (
    command,
    feed,
    flushed,
    new_owner,
    nodes,
    pod,
    synced,
    uid,
)
from tests.decoded_feed import comparison, watched

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def owner(writer):
    return new_owner(writer, bind_stuck_after=10, bind_deadline=60)


def assumed(owner, p, node="n1"):
    return command(owner, "assume", {"uid": uid(p), "node": node}, "alice")


def test_a_bind_that_never_finishes_is_stuck_then_forgotten_at_the_deadline(owner, writer):
    stuck, other = pod("stuck"), pod("other")
    synced(owner, nodes("n1"), [stuck, other])
    assumed(owner, stuck)
    owner.clock.now += 9
    assert owner.status()["binds_stuck"] == 0
    # The watch keeps updating the pod (a label): its clock is not reset by that.
    relabelled = dict(stuck, metadata=dict(stuck["metadata"], labels={"x": "1"},
                                           resourceVersion="11"))
    feed(owner, watched("pods", "MODIFIED", relabelled))
    owner.clock.now += 2
    status = owner.status()
    assert status["binds_stuck"] == 1 and status["oldest_stuck"]["uid"] == uid(stuck)
    assert owner.forget_overdue_binds() == 0                 # not yet at the deadline
    owner.clock.now += 50                                    # 61 s after it was assumed
    assert owner.forget_overdue_binds() == 1
    assert owner.cache.pod_state({"metadata": {"uid": uid(stuck)}}) is None
    assert owner.status()["binds_stuck"] == 0
    assumed(owner, other)                                    # scheduling goes on around it
    flushed(owner, writer)
    forgotten = Transition.objects.get(key=uid(stuck), kind="pod_forgotten")
    assert (forgotten.cause, forgotten.actor) == (BIND_DEADLINE_CAUSE, "owner")
    audit = AuditAction.objects.get(action="forget", target=uid(stuck))
    assert audit.ok and audit.actor == "owner" and "bind deadline" in audit.message
    assert PodRecord.objects.get(uid=uid(other)).state == "Assumed"


def test_a_finished_binding_is_left_to_its_expiry(owner):
    p = pod("p")
    synced(owner, nodes("n1"), [p])
    assumed(owner, p)
    command(owner, "finish_binding", {"uid": uid(p), "now": owner.clock.now}, "bind")
    owner.clock.now += 25
    assert owner.status()["binds_stuck"] == 0
    assert owner.forget_overdue_binds() == 0
    assert owner.cache.is_assumed_pod({"metadata": {"uid": uid(p)}})


def test_the_read_model_says_when_a_pod_was_assumed(owner, writer):
    p = pod("p")
    synced(owner, nodes("n1"), [p])
    at = owner.clock.now
    assumed(owner, p)
    owner.clock.now += 5
    flushed(owner, writer)
    assert PodRecord.objects.get(uid=uid(p)).assumed_at.timestamp() == at


def test_an_overdue_bind_is_drift_to_the_comparer(owner, writer):
    p = pod("p")
    synced(owner, nodes("n1"), [p])
    assumed(owner, p)
    owner.clock.now += 11
    feed(owner, comparison(nodes("n1"), [p], "30"))
    flushed(owner, writer)
    run = ComparerRun.objects.get()
    assert not run.clean and run.report["overdue_binds"] == [uid(p)] and run.error == ""


def test_a_comparison_that_could_not_be_made_is_recorded_with_its_error(owner, writer):
    synced(owner, nodes("n1"), [])
    feed(owner, CompareFailed("could not list the cluster: ConnectionRefusedError"))
    flushed(owner, writer)
    run = ComparerRun.objects.get()
    assert not run.clean and "ConnectionRefusedError" in run.error
