"""The reflector on PersistentVolumeClaims (the owner's and the stand-in's claims watch)
against the simulated cluster: listed and watched like pods, and an RBAC denial (403, the
simulated cluster's `forbidden_resources` knob) said once while the reflector keeps asking."""
import logging

import pytest
from kubernetes import client

from dashboard.kube.reflector import CLAIMS, Reflector
from tests.dashboard.feedhelpers import wait_reflector


def claim(name: str) -> dict:
    return {"metadata": {"name": name},
            "spec": {"accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": "1Gi"}}}}


def test_claims_are_listed_then_watched(running, sim, v1):
    v1.create_namespaced_persistent_volume_claim("default", claim("before"))
    r, rec = running.start(CLAIMS)
    assert [o["metadata"]["name"] for o in rec.relists[0].items] == ["before"]
    v1.create_namespaced_persistent_volume_claim("default", claim("after"))
    v1.delete_namespaced_persistent_volume_claim("before", "default")
    rec.wait_for(lambda rec: rec.events_for("before"), "the DELETED of the first claim")
    assert [(w.type, w.obj["metadata"]["name"]) for w in rec.watched] == [
        ("ADDED", "after"), ("DELETED", "before")]
    assert set(rec.mirror) == {"after"} and r.forbidden is False


def test_a_forbidden_kind_is_said_once_asked_again_and_followed_once_granted(running, sim,
                                                                            caplog):
    sim.faults.update(forbidden_resources=CLAIMS)
    caplog.set_level(logging.INFO, logger="schedview.feed.reflector")
    r, rec = running.start(CLAIMS, synced=False, backoff=(0.01, 0.02))
    wait_reflector(r, lambda r: r.stats["forbidden"] >= 3, "three 403 answers")
    assert r.forbidden and rec.items == [] and r.state != "stopped"
    denials = [m for m in caplog.messages if "forbids" in m]
    assert denials == [
        'persistentvolumeclaims: the API server forbids this account to list them (HTTP 403: '
        'persistentvolumeclaims is forbidden: User "system:serviceaccount:schedview:'
        'schedview-owner" cannot list resource "persistentvolumeclaims" in API group "" at '
        'the cluster scope); carrying on without them, asking again every 0.02 s at most']
    assert r.stats["errors"] == 0          # a denial is not a transport problem
    sim.faults.update(forbidden_resources="")
    rec.wait_for(lambda rec: rec.relists, "the list once granted")
    assert not r.forbidden
    assert any("listed again after HTTP 403" in m for m in caplog.messages)


def test_a_forbidden_watch_after_a_good_list_is_a_denial_too(sim, caplog):
    """RBAC granting list but not watch: the watch's 403 is said once as well."""
    api = client.CoreV1Api(sim.api_client())
    r = Reflector(api, CLAIMS, lambda item: None)
    r.list_once()
    sim.faults.update(forbidden_resources=CLAIMS)
    assert r.watch_once() == "error"
    assert r.watch_once() == "error"
    assert r.forbidden and r.stats["forbidden"] == 2
    assert len([m for m in caplog.messages if "forbids this account to watch" in m]) == 1


@pytest.mark.parametrize("kind", ["persistentvolumes", "claims"])
def test_kinds_it_does_not_know_are_refused(sim, kind):
    with pytest.raises(ValueError):
        Reflector(client.CoreV1Api(sim.api_client()), kind, lambda item: None)
