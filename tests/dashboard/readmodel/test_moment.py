"""The cluster at a kept moment: after a scripted run of the owner (scripted_run.py), the
state reconstructed at each intermediate moment equals what the read model held live at
that moment."""
from datetime import timedelta

import pytest

from dashboard.models import Checkpoint, PrunedHistory, Transition
from dashboard.readmodel import moment as moment_module
from dashboard.readmodel.moment import BadMoment, Gone, moment, parse_at
from tests.dashboard.readmodel.scripted_run import scripted_run

pytestmark = pytest.mark.django_db(transaction=True)


def past_view(at: str) -> dict:
    found = moment(at)
    keys = ("zone", "tree_index", "has_node", "generation", "pods", "images", "requested",
            "non_zero_requested", "allocatable", "unschedulable", "taints")
    nodes = {n["name"]: {key: n[key] for key in keys} for n in found.nodes()}
    pods = {p["uid"]: (p["node"], p["state"], p["binding_finished"], p["milli_cpu"],
                       p["memory"], p["priority"]) for p in found.pods()}
    return {"nodes": nodes, "pods": pods}


@pytest.fixture
def run():
    with scripted_run() as moments:
        yield moments


def test_each_moment_reads_as_the_read_model_held_it_live(run):
    assert Checkpoint.objects.count() == 2
    assert len({seq for seq, _, _ in run}) == len(run)        # every step moved the history
    for seq, live, counts in run:
        moment_module.forget_reconstructions()
        assert past_view(str(seq)) == live, f"at seq {seq}"
        found = moment(str(seq)).counts()
        assert (found["assumed"], found["added"]) == (counts["Assumed"], counts["Added"])
    # Again, latest first, each from the decoded checkpoint the reads before replayed on:
    # replaying never changes the state it started from.
    moment_module.forget_reconstructions()
    for seq, live, _ in reversed(run):
        assert past_view(str(seq)) == live, f"at seq {seq}, reusing its checkpoint"


def test_a_moment_between_steps_reads_as_the_step_before(run):
    (seq, live, _), (after, _, _) = run[3], run[4]
    assumed_then = past_view(str(after - 1))["pods"]   # w2 assumed, forgotten next
    assert {p[:2] for p in assumed_then.values()} >= {("n2", "Assumed")}
    assert (500, 1073741824) in {p[3:5] for p in assumed_then.values() if p[1] == "Assumed"}
    at = Transition.objects.get(seq=seq).at + timedelta(milliseconds=1)
    assert parse_at(at.isoformat()).seq == seq
    assert past_view(at.isoformat()) == live


def test_zones_and_the_counts_of_outcomes_follow_the_history(run):
    last_seq = run[-2][0]   # before the new leader
    found = moment(str(last_seq))
    assert found.zones() == [{"zone": "region-1/zone-a", "nodes": ["n3"]},
                             {"zone": "region-1/zone-b", "nodes": ["n2"]},
                             {"zone": "region-1/zone-c", "nodes": ["n4"]}]
    counts = found.counts()
    assert (counts["expired_recently"], counts["forgotten_recently"]) == (1, 1)


def test_before_the_oldest_checkpoint_is_gone_and_pruning_moves_it(run):
    first = Checkpoint.objects.order_by("seq").first()
    with pytest.raises(Gone, match="before the oldest moment kept"):
        moment(str(first.seq - 1))
    with pytest.raises(Gone):
        moment("2001-01-01T00:00:00Z")
    second = Checkpoint.objects.order_by("seq").last()
    PrunedHistory.objects.create(pk=1, below_seq=second.seq - 5)
    moment_module.forget_reconstructions()
    with pytest.raises(Gone, match=f"seq {second.seq}"):
        moment(str(second.seq - 1))
    assert moment(str(second.seq)).seq == second.seq


@pytest.mark.parametrize("at,message", [
    ("", "give a sequence number or an ISO 8601 time"),
    ("yesterday", "neither a sequence number nor an ISO 8601 time"),
    ("99999999", "after the latest event"),
    ("2999-01-01T00:00:00Z", "in the future"),
])
def test_bad_at_is_refused_clearly(run, at, message):
    with pytest.raises(BadMoment, match=message):
        parse_at(at)
