"""The cluster at a kept moment: after a scripted run of the owner (assumes, binds,
forgets, expiries, node changes and deletions, a new leader), the state reconstructed at
each intermediate moment equals what the read model held live at that moment."""
from datetime import timedelta

import pytest

from schedcache import Cache
from simcluster.generate import make_node, make_pod

from dashboard.models import Checkpoint, NodeRecord, PodRecord, PrunedHistory, Transition
from dashboard.owner.commands import CommandServer
from dashboard.owner.owner import CacheOwner
from dashboard.owner.projection import ProjectionWriter
from dashboard.readmodel import moment as moment_module
from dashboard.readmodel.moment import BadMoment, Gone, moment, parse_at
from tests.decoded_feed import synced_items, watched

pytestmark = pytest.mark.django_db(transaction=True)

CHECKPOINT_PERIOD = 60.0


class Clock:
    def __init__(self, now=1_700_000_000.0):
        self.now = now

    def __call__(self):
        return self.now


def uid(obj):
    return obj["metadata"]["uid"]


def pod(name, node=None, cpu="500m", **kw):
    return make_pod(name, namespace="team", node_name=node,
                    requests={"cpu": cpu, "memory": "1Gi"}, **kw)


def bumped(obj, version, **changes):
    return dict(obj, metadata=dict(obj["metadata"], resourceVersion=str(version)), **changes)


def live_view() -> dict:
    """What the read model holds now, in the shape a moment is compared in."""
    nodes = {r.name: {"zone": r.zone, "tree_index": r.tree_index, "has_node": r.has_node,
                      "generation": r.generation, "pods": r.pods, "images": r.images,
                      "requested": r.requested, "non_zero_requested": r.non_zero_requested,
                      "allocatable": r.allocatable, "unschedulable": r.unschedulable,
                      "taints": r.taints}
             for r in NodeRecord.objects.all()}
    pods = {r.uid: (r.node, r.state, r.binding_finished, r.milli_cpu, r.memory, r.priority)
            for r in PodRecord.objects.filter(state__in=["Assumed", "Added"])}
    return {"nodes": nodes, "pods": pods}


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
    """A scripted owner run: [(seq, the read model's view then, counts then)] per step."""
    moment_module._kept.clear()
    writer = ProjectionWriter().start()
    clock = Clock()
    owner = CacheOwner(Cache(ttl=30), command_server=CommandServer({}), writer=writer,
                       seq_base=100, epoch=7, clock=clock, checkpoint_period=CHECKPOINT_PERIOD)
    moments = []

    def do(op, args, actor="alice"):
        return owner.commands.handlers[op](args, actor)

    def step(*items, advance=5.0):
        for item in items:
            owner.apply(item)
        clock.now += advance
        owner.flush()
        assert writer.wait_idle(timeout=30)
        seq = Transition.objects.order_by("-seq").values_list("seq", flat=True).first()
        view = live_view()
        counts = {state: sum(1 for p in view["pods"].values() if p[1] == state)
                  for state in ("Assumed", "Added")}
        moments.append((seq, view, counts))

    n1, n2, n3 = (make_node(name, zone=zone) for name, zone in
                  (("n1", "zone-a"), ("n2", "zone-b"), ("n3", "zone-a")))
    a, b = pod("a", "n1"), pod("b", "n2", cpu="2")
    w1, w2, w3 = pod("w1"), pod("w2"), pod("w3", priority=7)
    try:
        step(*synced_items([n1, n2, n3], [a, b, w1, w2, w3], "10"))          # checkpoint 1
        do("assume", {"uid": uid(w1), "node": "n1"})
        step()
        do("finish_binding", {"uid": uid(w1), "now": clock.now}, "bind")
        step()
        step(watched("pods", "MODIFIED",
                     bumped(w1, 20, spec=dict(w1["spec"], nodeName="n1"))))   # confirmed
        do("assume", {"uid": uid(w2), "node": "n2"})
        do("forget", {"uid": uid(w2), "strict": True}, "bob")
        step()
        do("assume", {"uid": uid(w3), "node": "n3"})
        step()
        do("expire", {"uid": uid(w3)}, "bob")
        step()
        cordoned = bumped(n2, 30, spec=dict(n2["spec"], unschedulable=True, taints=[
            {"key": "maintenance", "value": "yes", "effect": "NoSchedule"}]))
        step(watched("nodes", "MODIFIED", cordoned))
        step(watched("pods", "ADDED", pod("c", "n3", cpu="3")),
             advance=CHECKPOINT_PERIOD + 1)                                   # checkpoint 2
        step(watched("nodes", "DELETED", n1))                                 # n1: a ghost
        step(watched("nodes", "ADDED", make_node("n4", zone="zone-c")))
        step(watched("pods", "DELETED", a))
        step(watched("pods", "DELETED", bumped(w1, 40, spec=dict(w1["spec"], nodeName="n1"))))
        step(watched("pods", "MODIFIED", bumped(b, 50, spec=dict(b["spec"], containers=[
            dict(b["spec"]["containers"][0], resources={"requests": {"cpu": "4"}})]))))
        # A new leader: its cache starts empty and fills from its own lists (c left meanwhile)
        owner = CacheOwner(Cache(ttl=30), command_server=CommandServer({}), writer=writer,
                           seq_base=moments[-1][0], epoch=8, clock=clock)
        owner.note_leader("owner-2")
        step(*synced_items([cordoned, make_node("n4", zone="zone-c")], [b], "60"))
        yield moments
    finally:
        writer.close()


def test_each_moment_reads_as_the_read_model_held_it_live(run):
    assert Checkpoint.objects.count() == 2
    assert len({seq for seq, _, _ in run}) == len(run)        # every step moved the history
    for seq, live, counts in run:
        moment_module._kept.clear()
        assert past_view(str(seq)) == live, f"at seq {seq}"
        found = moment(str(seq)).counts()
        assert (found["assumed"], found["added"]) == (counts["Assumed"], counts["Added"])


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
    moment_module._kept.clear()
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
