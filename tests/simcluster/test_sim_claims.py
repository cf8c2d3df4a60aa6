"""PersistentVolumeClaims served as pods are: list (capture 30's shape: a list whose metadata
is only its resourceVersion, items without kind), watch from a list's version (capture 40:
one event a line, DELETED carrying a new version, a BOOKMARK), a compacted version answered
with one ERROR 410 event (capture 95); and the knob that forbids a resource, answered 403 as
RBAC does (no 403 among the captures: the Status is shaped as capture 60's 404)."""
import re

import orjson
import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.simcluster.simhelpers import capture

CLAIMS = "/api/v1/persistentvolumeclaims"


def claim_body(name: str) -> dict:
    return {"metadata": {"name": name},
            "spec": {"accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": "1Gi"}}}}


@pytest.fixture
def v1(sim):
    return client.CoreV1Api(sim.api_client())


def test_claims_are_created_and_listed_cluster_wide_and_by_namespace(sim, v1, raw):
    resp, body = raw.call("GET", CLAIMS)
    assert resp.status == 200
    assert orjson.loads(body) == {"kind": "PersistentVolumeClaimList", "apiVersion": "v1",
                                  "metadata": {"resourceVersion": str(sim.resource_version)},
                                  "items": []}
    created = v1.create_namespaced_persistent_volume_claim("default", claim_body("data"))
    assert created.status.phase == "Pending" and created.spec.volume_mode == "Filesystem"
    v1.create_namespaced_persistent_volume_claim("kube-system", claim_body("logs"))
    listed = v1.list_persistent_volume_claim_for_all_namespaces()
    assert [(c.metadata.namespace, c.metadata.name) for c in listed.items] == [
        ("default", "data"), ("kube-system", "logs")]
    assert listed.metadata.resource_version == str(sim.resource_version)
    _, body = raw.call("GET", "/api/v1/namespaces/default/persistentvolumeclaims")
    items = orjson.loads(body)["items"]
    assert [c["metadata"]["name"] for c in items] == ["data"]
    assert "kind" not in items[0] and "apiVersion" not in items[0]     # as capture 30's items
    assert v1.read_namespaced_persistent_volume_claim("data", "default").metadata.uid \
        == created.metadata.uid


def test_a_watch_from_the_lists_version_sees_claims_come_and_go_then_a_bookmark(sim, v1, raw):
    sim.settings.bookmark_interval = 0.2
    rv = v1.list_persistent_volume_claim_for_all_namespaces().metadata.resource_version
    v1.create_namespaced_persistent_volume_claim("default", claim_body("data"))
    v1.delete_namespaced_persistent_volume_claim("data", "default")
    _, body = raw.call("GET", f"{CLAIMS}?allowWatchBookmarks=true&resourceVersion={rv}"
                              "&timeoutSeconds=1&watch=true")
    events = [orjson.loads(line) for line in body.splitlines()]
    assert [e["type"] for e in events[:2]] == ["ADDED", "DELETED"]
    added, deleted = (e["object"] for e in events[:2])
    assert added["kind"] == "PersistentVolumeClaim" and added["metadata"]["name"] == "data"
    assert int(deleted["metadata"]["resourceVersion"]) > int(added["metadata"]["resourceVersion"])
    bookmark = events[-1]
    assert bookmark == {"type": "BOOKMARK", "object": {
        "kind": "PersistentVolumeClaim", "apiVersion": "v1",
        "metadata": {"resourceVersion": str(sim.resource_version)}, "spec": {}, "status": {}}}
    with pytest.raises(ApiException) as gone:
        v1.read_namespaced_persistent_volume_claim("data", "default")
    assert gone.value.status == 404


def test_a_watch_from_a_compacted_version_gets_one_error_event(sim, v1, raw):
    v1.create_namespaced_persistent_volume_claim("default", claim_body("data"))
    sim.compact()
    _, body = raw.call("GET", f"{CLAIMS}?resourceVersion=1&timeoutSeconds=5&watch=true")
    want = capture("95c-watch-pods-rv1-too-old-wire-framing.chunked-raw.txt").split(b"\r\n")[1]
    oldest = sim.store.resources["persistentvolumeclaims"].compacted_rv + 1
    assert body == re.sub(rb"\(\d+\)", b"(%d)" % oldest, want)


def test_a_forbidden_resource_answers_403_to_list_watch_and_get_and_others_are_served(sim, v1,
                                                                                       raw):
    v1.create_namespaced_persistent_volume_claim("default", claim_body("data"))
    sim.faults.update(forbidden_resources="persistentvolumeclaims")
    resp, body = raw.call("GET", CLAIMS)
    assert resp.status == 403 and resp.reason == "Forbidden"
    status = orjson.loads(body)
    shape = orjson.loads(capture("60-error-get-missing-pod-404.body.json"))
    assert list(status) == list(shape)
    assert status == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'persistentvolumeclaims is forbidden: User "system:serviceaccount:schedview:'
                   'schedview-owner" cannot list resource "persistentvolumeclaims" in API '
                   'group "" at the cluster scope',
        "reason": "Forbidden", "details": {"kind": "persistentvolumeclaims"}, "code": 403}
    resp, body = raw.call("GET", "/api/v1/namespaces/default/persistentvolumeclaims"
                                 f"?watch=true&timeoutSeconds=1")
    assert resp.status == 403
    assert 'cannot watch resource "persistentvolumeclaims" in API group "" in the namespace ' \
           '"default"' in orjson.loads(body)["message"]
    with pytest.raises(ApiException) as denied:
        v1.read_namespaced_persistent_volume_claim("data", "default")
    assert denied.value.status == 403
    assert raw.call("GET", "/api/v1/pods?limit=1")[0].status == 200
    sim.faults.update(forbidden_resources="")
    assert raw.call("GET", CLAIMS)[0].status == 200
