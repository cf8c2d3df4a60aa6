"""The doors (dashboard/owner/changes.py): each change of the cache's assumptions is one
door, its event stamped with the cause and the actor, the owner's own acts audited; and
nothing else in the owner's code changes an assumption."""
import re
from pathlib import Path

import pytest

from schedcache import Cache, CacheError
from simcluster.generate import make_node, make_pod

from dashboard.owner.changes import BIND_DEADLINE_CAUSE
from dashboard.owner.commands import CommandError, CommandServer
from dashboard.owner.owner import CacheOwner
from tests.decoded_feed import synced_items

UID = "uid-a"
ROOT = Path(__file__).resolve().parents[3]
PACKAGES = ("common", "launcher", "owner", "pools", "standin", "web", "worker")


class Clock:
    def __init__(self, now=1_000_000.0):
        self.now = now

    def __call__(self):
        return self.now


def fresh_owner():
    """An owner with node n1 and the pending pod a, the sync's events taken."""
    owner = CacheOwner(Cache(ttl=30), command_server=CommandServer({}), clock=Clock(),
                       bind_deadline=60)
    for item in synced_items([make_node("n1")], [make_pod("a", namespace="team", uid=UID)]):
        owner.apply(item)
    owner.journal.take()
    return owner


def placed(owner):
    pod = owner.pending[UID]
    return dict(pod, spec=dict(pod["spec"], nodeName="n1"))


def assumed(owner):
    owner.changes.assume(placed(owner), "operator", "alice")
    owner.journal.take()


def finished(owner):
    assumed(owner)
    owner.changes.finish_binding(UID, "bind", "bind", now=1000.0)
    owner.journal.take()


def overdue(owner):
    assumed(owner)
    owner.clock.now += 61


def nothing(owner):
    pass


# (door, before it, the door's call, the event's kind, cause, actor, whether it is audited)
DOORS = [
    ("assume", nothing, lambda o: o.changes.assume(placed(o), "operator", "alice"),
     "pod_assumed", "operator", "alice", False),
    ("finish binding", assumed,
     lambda o: o.changes.finish_binding(UID, "bind", "bind", now=1000.0),
     "pod_binding_finished", "bind", "bind", False),
    ("forget", assumed, lambda o: o.changes.forget(UID, "n1", "extender", "kube-scheduler"),
     "pod_forgotten", "extender", "kube-scheduler", False),
    ("expire", assumed, lambda o: o.changes.expire(UID, "operator", "bob"),
     "pod_expired", "operator", "bob", False),
    ("reap", finished, lambda o: o.changes.reap("reaper", "reaper", now=1031.0),
     "pod_expired", "reaper", "reaper", False),
    ("bind deadline", overdue, lambda o: o.forget_overdue_binds(),
     "pod_forgotten", BIND_DEADLINE_CAUSE, "owner", True),
]


@pytest.mark.parametrize("door, before, call, kind, cause, actor, audited", DOORS,
                         ids=[d[0] for d in DOORS])
def test_a_door_changes_the_cache_and_stamps_its_event(door, before, call, kind, cause,
                                                       actor, audited):
    owner = fresh_owner()
    before(owner)
    call(owner)
    events, _, batch = owner.journal.take()
    assert [(e.kind, e.key, c, a) for e, c, a, _, _ in events] == [(kind, UID, cause, actor)]
    assert owner.clock.now == events[0][3]           # stamped with the owner's clock
    if audited:
        [audit] = batch.audits
        assert (audit["actor"], audit["action"], audit["target"], audit["node"],
                audit["ok"]) == (actor, "forget", UID, "n1", True)
        assert audit["details"] == {"namespace": "team", "name": "a", "cause": cause}
        assert "bind deadline of 60 s" in audit["message"]
    else:
        assert batch.audits == []


WHY = 'binding refused: 403 pods "a" is forbidden: admission webhook denied the request'
# (how the pod is forgotten, the detail its transition keeps)
FORGETS = [
    ("the door, told why", lambda o: o.changes.forget(UID, "n1", "extender", "ks", why=WHY),
     WHY),
    ("a bind task's forget command", lambda o: o.commands.handlers["forget"](
        {"uid": UID, "node": "n1", "reason": WHY}, "bind"), WHY),
    ("the bind deadline", lambda o: (setattr(o.clock, "now", o.clock.now + 61),
                                     o.forget_overdue_binds()),
     "not bound within the bind deadline of 60 s"),
    ("an operator, saying nothing", lambda o: o.changes.forget(UID, "n1", "operator", "al"),
     ""),
]


@pytest.mark.parametrize("how, call, detail", FORGETS, ids=[f[0] for f in FORGETS])
def test_a_forget_keeps_its_cause_in_the_transitions_detail(how, call, detail):
    """Issue 23: a failed bind's API server answer is on the pod's timeline, not only in
    the console. The stamp's detail is the forget's alone: what follows carries none."""
    owner = fresh_owner()
    assumed(owner)
    call(owner)
    owner.changes.assume(placed(owner), "operator", "alice")
    events, _, _ = owner.journal.take()
    assert [(e.kind, d) for e, _, _, _, d in events] == [("pod_forgotten", detail),
                                                          ("pod_assumed", "")]


def test_a_forget_commands_reason_must_be_text():
    owner = fresh_owner()
    assumed(owner)
    with pytest.raises(CommandError, match="reason must be a string"):
        owner.commands.handlers["forget"]({"uid": UID, "reason": ["x"]}, "bind")
    assert owner.cache.is_assumed_pod({"metadata": {"uid": UID}})


def test_the_bind_deadline_leaves_a_finished_binding_and_a_young_one_alone():
    owner = fresh_owner()
    assumed(owner)
    owner.clock.now += 59
    assert owner.forget_overdue_binds() == 0
    owner.changes.finish_binding(UID, "bind", "bind", now=owner.clock.now)
    owner.clock.now += 10
    assert owner.forget_overdue_binds() == 0
    assert owner.cache.is_assumed_pod({"metadata": {"uid": UID}})


@pytest.mark.parametrize("call", [
    lambda o: o.changes.assume(placed(o), "operator", "alice"),      # already assumed
    lambda o: o.changes.forget(UID, "n2", "operator", "alice"),      # not on n2
    lambda o: o.changes.expire("uid-nobody", "operator", "alice"),   # not assumed
], ids=["assume twice", "forget on another node", "expire what is not assumed"])
def test_a_refused_door_changes_nothing(call):
    owner = fresh_owner()
    assumed(owner)
    seq = owner.cache.event_seq
    with pytest.raises(CacheError):
        call(owner)
    assert owner.cache.event_seq == seq
    assert owner.journal.take()[2].audits == []


# The stand-in for kube-scheduler keeps a cache of its own, in another process.
_NOT_THE_OWNERS = {"dashboard/standin/standin_view.py"}
_ASSUMPTION_CHANGES = re.compile(
    r"cache\.(assume_pod|assume_pod_if_bind_succeeds|finish_binding|forget_pod|expire_pod|"
    r"cleanup_assumed_pods)\(")


def test_only_the_doors_change_the_caches_assumptions():
    found = []
    for path in sorted(p for top in PACKAGES for p in (ROOT / top).rglob("*.py")):
        name = str(path.relative_to(ROOT))
        if name in _NOT_THE_OWNERS or name == "dashboard/owner/changes.py":
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if _ASSUMPTION_CHANGES.search(line):
                found.append(f"{name}:{number}: {line.strip()}")
    assert found == []
