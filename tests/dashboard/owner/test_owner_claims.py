"""The owner's claims (dashboard/owner/owner.py `_apply_claims`, dashboard/kube/claims.py):
the why-pending recording's cluster handed to a real owner as the decoder hands it, with the
claims' list and events; the missing-pvc case's message back, word for word, from the
owner's `diagnose` command, only once the claims are known; a claim created later turns the
pod's diagnosis to the nodes' reasons and the pending pods are recounted; a denial (403)
makes the claims unknown again. No database: nothing is flushed."""
import pytest

from schedcache import Cache

from dashboard.kube.reflector import CLAIMS
from dashboard.owner.decoder import DecodedDenied
from dashboard.owner.handlers import CommandHandlers
from dashboard.owner.owner import CacheOwner
from tests.decoded_feed import listed, synced_items, watched
from tests.scheduling import why_pending as why
from tests.scheduling.why_pending import BY_NAME, CASES

CASE = BY_NAME["missing-pvc"]
UID = "uid-case-missing-pvc"
MISSING = 'persistentvolumeclaim "no-such-claim" not found'


def claim(namespace: str, name: str) -> dict:
    return {"metadata": {"namespace": namespace, "name": name, "uid": f"uid-{name}"}}


@pytest.fixture
def owner():
    owner = CacheOwner(Cache(ttl=30))
    for item in synced_items([why.node(n) for n in CASES["nodes_before"]],
                             why.placed_pods() + [why.pending(CASE)]):
        owner.apply(item)
    return owner


def diagnose(owner):
    return CommandHandlers(owner).diagnose({"uid": UID}, "alice")


def feed(owner, *items):
    for item in items:
        owner.apply(item)


def test_before_the_claims_are_listed_the_claim_is_named_unchecked(owner):
    result = diagnose(owner)
    assert result["fits"] and MISSING not in result["message"]
    assert any('persistentvolumeclaim "no-such-claim"' in note for note in result["unchecked"])
    assert owner.status()["claims"] == {"known": False, "count": 0, "denied": False}


def test_once_listed_the_owner_says_what_kube_scheduler_said(owner):
    """shared/k8s-wire/why-pending/cases.json, missing-pvc: the namespace held no claim."""
    feed(owner, *listed(CLAIMS, [claim("why", "other-claim"), claim("elsewhere",
                                                                    "no-such-claim")]))
    result = diagnose(owner)
    assert result["message"] == CASE["failed_scheduling"][-1] == CASE["pod_scheduled"]["message"]
    assert result["unchecked"] == [] and not result["fits"]
    (refusal,) = result["reasons"]        # every node gives it: refused before any filter
    assert (refusal["reason"], refusal["count"], len(refusal["nodes"])) == (MISSING, 7, 7)
    assert owner.status()["claims"] == {"known": True, "count": 2, "denied": False}


def test_a_claim_created_later_turns_the_diagnosis_to_the_nodes(owner):
    feed(owner, *listed(CLAIMS, []))
    assert diagnose(owner)["message"] == CASE["failed_scheduling"][-1]
    feed(owner, watched(CLAIMS, "ADDED", claim("why", "no-such-claim")))
    result = diagnose(owner)
    assert result["fits"] and MISSING not in result["message"] and result["unchecked"] == []
    feed(owner, watched(CLAIMS, "DELETED", claim("why", "no-such-claim")))
    assert diagnose(owner)["message"] == CASE["failed_scheduling"][-1]


def test_the_pending_pods_are_recounted_when_a_claim_they_name_comes(owner):
    feed(owner, *listed(CLAIMS, []))
    reasons = owner.pending_reasons
    reasons.step(now=0.0)
    assert reasons.counts == {MISSING: 1} and reasons.reasons == {UID: MISSING}
    sweeps = reasons.sweeps
    reasons.step(now=1.0)                  # within the period: no new sweep
    assert reasons.sweeps == sweeps
    feed(owner, watched(CLAIMS, "ADDED", claim("elsewhere", "no-such-claim")))
    reasons.step(now=2.0)                  # a claim no pending pod names: no recount
    assert reasons.sweeps == sweeps
    feed(owner, watched(CLAIMS, "ADDED", claim("why", "no-such-claim")))
    reasons.step(now=3.0)
    assert reasons.sweeps == sweeps + 1 and MISSING not in reasons.counts
    assert owner.status()["pending_sweeps"] == sweeps + 1     # the pages' nudge


def test_a_denial_makes_the_claims_unknown_and_a_later_list_known_again(owner):
    feed(owner, *listed(CLAIMS, []))
    owner.pending_reasons.step(now=0.0)
    sweeps = owner.pending_reasons.sweeps
    feed(owner, DecodedDenied(CLAIMS))
    assert owner.status()["claims"] == {"known": False, "count": 0, "denied": True}
    result = diagnose(owner)
    assert result["fits"] and result["unchecked"]
    owner.pending_reasons.step(now=1.0)
    assert owner.pending_reasons.sweeps == sweeps + 1
    feed(owner, *listed(CLAIMS, []))
    assert owner.status()["claims"] == {"known": True, "count": 0, "denied": False}
    assert diagnose(owner)["message"] == CASE["failed_scheduling"][-1]


def test_a_denial_of_the_pods_changes_nothing_in_the_cache(owner):
    pods = owner.cache.pod_count()
    assert owner.apply(DecodedDenied("pods")) == 0
    assert owner.cache.pod_count() == pods and UID in owner.pending
