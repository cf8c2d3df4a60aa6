"""A scripted run of the cache owner, in-process on the test database (as
tests/dashboard/owner/ drive it): nodes and pods listed, assumes, a finished bind, a
confirmation, a forget, an expiry, a node cordoned, a checkpoint between, a node deleted
with pods left, a node added, pods deleted, a pod's requests changed, and a new leader.
After each step it notes the sequence number and what the read model held then."""
from contextlib import contextmanager

from schedcache import Cache
from simcluster.generate import make_node, make_pod

from dashboard.models import NodeRecord, PodRecord, Transition
from dashboard.owner.commands import CommandServer
from dashboard.owner.owner import CacheOwner
from dashboard.owner.projection import ProjectionWriter
from dashboard.readmodel import moment as moment_module
from tests.decoded_feed import synced_items, watched

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


@contextmanager
def scripted_run():
    """[(seq, the read model's view then, its pods by state then)], one a step."""
    moment_module.forget_reconstructions()
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
