"""The owner's `diagnose` command (dashboard/owner/handlers.py): the why-pending recording's
cluster handed to a real owner as the decoder would, and kube-scheduler's own message back
for a pending pod; refusals for what is not a pending pod. No database: nothing is flushed."""
import pytest

from schedcache import Cache
from simcluster.generate import make_node

from dashboard.owner.handlers import CommandHandlers
from dashboard.owner.owner import CacheOwner
from dashboard.wire.commands import CommandError
from tests.decoded_feed import synced_items
from tests.scheduling import why_pending as why
from tests.scheduling.why_pending import BY_NAME, CASES


@pytest.fixture
def owner():
    owner = CacheOwner(Cache(ttl=30))
    pending = [why.pending(BY_NAME[name]) for name in ("cpu", "preempt-helps", "anti-affinity")]
    for item in synced_items([why.node(n) for n in CASES["nodes_before"]],
                             why.placed_pods() + pending):
        owner.apply(item)
    return owner


def diagnose(owner, uid):
    return CommandHandlers(owner).diagnose({"uid": uid}, "alice")


def test_a_pending_pod_gets_kube_schedulers_message_from_the_owners_cache(owner):
    for name in ("cpu", "anti-affinity", "preempt-helps"):
        result = diagnose(owner, f"uid-case-{name}")
        assert result["kube_scheduler"] is None     # the recorded pods, as created
        assert result["message"] == BY_NAME[name]["failed_scheduling"][-1], name
        assert result["computed_at_seq"] == owner.seq_base + owner.cache.event_seq
    helps = diagnose(owner, "uid-case-preempt-helps")["preemption"]
    assert helps["helps"] and helps["node"] == "small-1" and len(helps["victims"]) == 3


def test_the_diagnosis_is_a_dry_run_and_follows_the_cache(owner):
    """Nothing changes (the victims stay); a node added by the feed is seen next time."""
    handlers = CommandHandlers(owner)
    generation = owner.cache.generation
    assert not handlers.diagnose({"uid": "uid-case-cpu"}, "alice")["fits"]
    assert owner.cache.generation == generation
    assert len(owner.cache.node_info("small-1").pods) == 3
    owner.cache.add_node(make_node("huge-0", cpu="128", memory="512Gi"))
    assert handlers.diagnose({"uid": "uid-case-cpu"}, "alice")["feasible"] == ["huge-0"]


@pytest.mark.parametrize("args, status, words", [
    ({"uid": "uid-low-0"}, 409, "is Added, not pending"),
    ({"uid": "uid-nobody"}, 404, "neither cached nor pending"),
    ({}, 400, "needs the pod's uid"),
    ({"uid": 7}, 400, "needs the pod's uid"),
    ({"uid": "uid-case-cpu", "nodes": "no"}, 400, "nodes must be true or false"),
])
def test_what_is_not_a_pending_pod_is_refused(owner, args, status, words):
    with pytest.raises(CommandError) as refused:
        CommandHandlers(owner).diagnose(args, "alice")
    assert refused.value.status == status and words in refused.value.message


def test_kube_schedulers_own_last_word_comes_with_it():
    owner = CacheOwner(Cache(ttl=30))
    case = BY_NAME["gpu-untolerated"]
    pod = why.pending(case)
    pod["status"] = {"phase": "Pending", "conditions": [case["pod_scheduled"]]}
    for item in synced_items([why.node(n) for n in CASES["nodes_before"]],
                             why.placed_pods() + [pod]):
        owner.apply(item)
    result = diagnose(owner, pod["metadata"]["uid"])
    assert result["kube_scheduler"]["message"] == result["message"] \
        == case["pod_scheduled"]["message"]
    assert result["kube_scheduler"]["reason"] == "Unschedulable"


def test_the_page_asks_without_every_nodes_verdict(owner):
    whole = CommandHandlers(owner).diagnose({"uid": "uid-case-cpu"}, "alice")
    short = CommandHandlers(owner).diagnose({"uid": "uid-case-cpu", "nodes": False}, "alice")
    assert len(whole["nodes"]) == 7 and short["nodes"] == []
    assert short["reasons"] == whole["reasons"] and short["closest"] == whole["closest"]
