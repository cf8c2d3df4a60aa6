"""The official kubernetes client (unchanged) against the simulated cluster over HTTP."""

import asyncio

import orjson
import pytest
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from tests.simcluster.simhelpers import pending_pod_body


def names(pod_list):
    return [(p.metadata.namespace, p.metadata.name) for p in pod_list.items]


def first_bound(sim):
    return next(p for p in sim.pods() if p["spec"].get("nodeName"))


def test_kubeconfig_is_accepted_by_load_kube_config(sim, tmp_path):
    path = sim.write_kubeconfig(tmp_path / "kubeconfig")
    api_client = config.new_client_from_config(config_file=path)
    assert client.VersionApi(api_client).get_code().git_version == "v1.36.2"
    assert len(client.CoreV1Api(api_client).list_node().items) == 12


def test_list_with_paging_is_one_consistent_snapshot(sim, v1):
    full = v1.list_pod_for_all_namespaces()
    assert len(full.items) == 150
    page = v1.list_pod_for_all_namespaces(limit=40)
    assert page.metadata.remaining_item_count == 110
    # A change between pages must not show in the later pages (snapshot at page 1's rv).
    last = full.items[-1]
    v1.patch_namespaced_pod(last.metadata.name, last.metadata.namespace,
                            {"metadata": {"labels": {"changed": "yes"}}})
    seen = names(page)
    while page.metadata._continue:
        page = v1.list_pod_for_all_namespaces(limit=40, _continue=page.metadata._continue)
        assert page.metadata.resource_version == full.metadata.resource_version
        seen += names(page)
    assert seen == names(full)
    assert "changed" not in (page.items[-1].metadata.labels or {})
    assert page.metadata.remaining_item_count is None


def test_namespaced_list_and_selectors(sim, v1):
    pods = sim.pods()
    ns = pods[0]["metadata"]["namespace"]
    assert {p.metadata.namespace for p in v1.list_namespaced_pod(ns).items} == {ns}
    assert len(v1.list_namespaced_pod(ns).items) == sum(
        p["metadata"]["namespace"] == ns for p in pods)
    node = first_bound(sim)["spec"]["nodeName"]
    on_node = v1.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node}").items
    assert on_node and all(p.spec.node_name == node for p in on_node)
    unbound = v1.list_pod_for_all_namespaces(field_selector="spec.nodeName==").items
    assert len(unbound) == 15 and all(p.spec.node_name is None for p in unbound)
    bound = v1.list_pod_for_all_namespaces(field_selector="spec.nodeName!=").items
    assert len(bound) == 135
    running = v1.list_pod_for_all_namespaces(field_selector="status.phase=Running").items
    assert len(running) == 135
    system = v1.list_pod_for_all_namespaces(label_selector="k8s-app in (kube-proxy,fluent-bit)")
    assert {p.metadata.labels["k8s-app"] for p in system.items} == {"kube-proxy", "fluent-bit"}
    not_proxy = v1.list_namespaced_pod("kube-system", label_selector="k8s-app!=kube-proxy")
    assert all(p.metadata.labels["k8s-app"] != "kube-proxy" for p in not_proxy.items)
    with pytest.raises(ApiException) as e:
        v1.list_pod_for_all_namespaces(field_selector="spec.nosuch=x")
    assert e.value.status == 400


def test_create_get_patch_delete(sim, v1):
    created = v1.create_namespaced_pod("default", pending_pod_body("web-1"))
    assert created.status.phase == "Pending" and created.status.qos_class == "Burstable"
    assert created.spec.scheduler_name == "default-scheduler"
    assert created.metadata.managed_fields[0].manager == "OpenAPI-Generator"
    rv = int(created.metadata.resource_version)
    patched = v1.patch_namespaced_pod("web-1", "default", {"metadata": {"labels": {"x": "1"}}})
    assert patched.metadata.labels == {"app": "web-1", "x": "1"}
    assert int(patched.metadata.resource_version) > rv
    listed = v1.patch_namespaced_pod("web-1", "default",
                                     [{"op": "add", "path": "/metadata/labels/y", "value": "2"}])
    assert listed.metadata.labels == {"app": "web-1", "x": "1", "y": "2"}
    same = v1.patch_namespaced_pod("web-1", "default", {"metadata": {"labels": {"x": "1"}}})
    assert same.metadata.resource_version == listed.metadata.resource_version  # no-op write
    assert v1.read_namespaced_pod("web-1", "default").metadata.labels["y"] == "2"
    gone = v1.delete_namespaced_pod("web-1", "default")
    assert gone.metadata.deletion_grace_period_seconds == 0
    with pytest.raises(ApiException) as e:
        v1.read_namespaced_pod("web-1", "default")
    assert e.value.status == 404


def test_create_errors(sim, v1):
    v1.create_namespaced_pod("default", pending_pod_body("dup"))
    with pytest.raises(ApiException) as e:
        v1.create_namespaced_pod("default", pending_pod_body("dup"))
    assert e.value.status == 409 and orjson.loads(e.value.body)["reason"] == "AlreadyExists"
    with pytest.raises(ApiException) as e:
        v1.create_namespaced_pod("default", {"metadata": {"name": "Bad_Name"},
                                             "spec": {"containers": []}})
    body = orjson.loads(e.value.body)
    assert e.value.status == 422 and body["reason"] == "Invalid"
    assert [c["field"] for c in body["details"]["causes"]] == ["metadata.name", "spec.containers"]
    with pytest.raises(ApiException) as e:
        v1.create_namespaced_pod("nope", pending_pod_body("p"))
    assert e.value.status == 404 and orjson.loads(e.value.body)["details"]["kind"] == "namespaces"
    v1.create_namespace({"metadata": {"name": "fresh"}})
    assert v1.create_namespaced_pod("fresh", pending_pod_body("p")).metadata.namespace == "fresh"


def test_update_is_compare_and_swap(sim, v1):
    pod = v1.create_namespaced_pod("default", pending_pod_body("cas"))
    pod.metadata.labels["step"] = "1"
    updated = v1.replace_namespaced_pod("cas", "default", pod)
    pod.metadata.labels["step"] = "2"  # still carries the old resourceVersion
    with pytest.raises(ApiException) as e:
        v1.replace_namespaced_pod("cas", "default", pod)
    assert e.value.status == 409 and orjson.loads(e.value.body)["reason"] == "Conflict"
    with pytest.raises(ApiException) as e:
        v1.patch_namespaced_pod("cas", "default", {"metadata": {
            "resourceVersion": pod.metadata.resource_version, "labels": {"step": "3"}}})
    assert e.value.status == 409
    pod.metadata.resource_version = None  # unconditional: last writer wins
    final = v1.replace_namespaced_pod("cas", "default", pod)
    assert final.metadata.labels["step"] == "2"
    assert int(final.metadata.resource_version) > int(updated.metadata.resource_version)
    pod.spec.containers[0].name = "renamed"
    with pytest.raises(ApiException) as e:
        v1.replace_namespaced_pod("cas", "default", pod)
    assert e.value.status == 422


def test_binding_subresource_and_legacy_bindings(sim, v1):
    node = first_bound(sim)["spec"]["nodeName"]
    zone = sim.node(node)["metadata"]["labels"]["topology.kubernetes.io/zone"]
    v1.create_namespaced_pod("default", pending_pod_body("b1"))
    body = {"metadata": {"name": "b1", "annotations": {"example.io/placed-by": "test"}},
            "target": {"kind": "Node", "name": node}}
    rv_before = sim.resource_version
    resp = v1.create_namespaced_pod_binding("b1", "default", body, _preload_content=False)
    assert resp.status == 201
    assert sim.resource_version == rv_before + 1  # one write
    pod = v1.read_namespaced_pod("b1", "default")
    assert pod.spec.node_name == node
    assert pod.metadata.labels["topology.kubernetes.io/zone"] == zone
    assert pod.metadata.annotations["example.io/placed-by"] == "test"  # merged, as upstream
    assert [c.type for c in pod.status.conditions] == ["PodScheduled"]
    assert pod.metadata.generation == 1
    with pytest.raises(ApiException) as e:
        v1.create_namespaced_pod_binding("b1", "default", body, _preload_content=False)
    assert e.value.status == 409
    assert orjson.loads(e.value.body)["details"]["kind"] == "pods/binding"

    v1.create_namespaced_pod("default", pending_pod_body("b2"))
    resp = v1.create_namespaced_binding("default", {"metadata": {"name": "b2"},
                                                    "target": {"name": node}},
                                        _preload_content=False)
    assert resp.status == 201
    b2 = v1.read_namespaced_pod("b2", "default")
    assert b2.spec.node_name == node
    assert "topology.kubernetes.io/zone" not in b2.metadata.labels
    for name, body_name, status in (("missing", "missing", 404), ("b3", "b1", 400)):
        with pytest.raises(ApiException) as e:
            v1.create_namespaced_pod_binding(name, "default", {**body, "metadata": {
                "name": body_name}}, _preload_content=False)
        assert e.value.status == status


def test_delete_bound_pod_is_graceful_unless_grace_zero(sim, v1):
    pod = first_bound(sim)
    name, ns = pod["metadata"]["name"], pod["metadata"]["namespace"]
    terminating = v1.delete_namespaced_pod(name, ns)
    assert terminating.metadata.deletion_grace_period_seconds == 30
    assert terminating.metadata.generation == 2
    assert v1.read_namespaced_pod(name, ns).metadata.deletion_timestamp is not None
    with pytest.raises(ApiException) as e:
        v1.delete_namespaced_pod(name, ns, body=client.V1DeleteOptions(
            preconditions=client.V1Preconditions(resource_version="1")))
    assert e.value.status == 409
    v1.delete_namespaced_pod(name, ns, grace_period_seconds=0)
    with pytest.raises(ApiException) as e:
        v1.read_namespaced_pod(name, ns)
    assert e.value.status == 404


def test_a_uid_precondition_deletes_only_that_very_pod(sim, v1):
    """How kube-scheduler's stand-in evicts a victim: a pod of the same name made since is
    refused with 409 and left alone; the victim itself gets its grace period (46)."""
    pod = first_bound(sim)
    name, ns, uid = pod["metadata"]["name"], pod["metadata"]["namespace"], pod["metadata"]["uid"]
    with pytest.raises(ApiException) as e:
        v1.delete_namespaced_pod(name, ns, body={"preconditions": {"uid": "another-uid"}})
    assert e.value.status == 409
    assert orjson.loads(e.value.body)["message"] == (       # worded as 63f's
        f'Operation cannot be fulfilled on Pod "{name}": the UID in the precondition '
        f"(another-uid) does not match the UID in record ({uid}). The object might have "
        "been deleted and then recreated")
    assert v1.read_namespaced_pod(name, ns).metadata.deletion_timestamp is None
    terminating = v1.delete_namespaced_pod(name, ns, body={"preconditions": {"uid": uid}})
    assert terminating.metadata.deletion_grace_period_seconds == 30


def test_deletecollection_returns_the_matched_pods_before_deletion(sim, v1):
    for i in range(3):
        v1.create_namespaced_pod("default", pending_pod_body(f"dc-{i}", batch="x"))
    resp = v1.delete_collection_namespaced_pod("default", label_selector="batch=x",
                                               _preload_content=False)
    result = orjson.loads(resp.data)  # the client would parse this PodList as a V1Status
    assert result["kind"] == "PodList"
    assert [p["metadata"]["name"] for p in result["items"]] == ["dc-0", "dc-1", "dc-2"]
    assert all("deletionTimestamp" not in p["metadata"] for p in result["items"])
    assert v1.list_namespaced_pod("default", label_selector="batch=x").items == []


def test_nodes_status_only_through_the_subresource(sim, v1):
    name = sim.nodes()[0]["metadata"]["name"]
    before = v1.read_node(name)
    same = v1.patch_node(name, {"status": {"allocatable": {"cpu": "1"}}})
    assert same.metadata.resource_version == before.metadata.resource_version
    assert same.status.allocatable["cpu"] == before.status.allocatable["cpu"]
    changed = v1.patch_node_status(name, {"status": {"allocatable": {"cpu": "1"}}})
    assert changed.status.allocatable["cpu"] == "1"
    assert changed.metadata.managed_fields[-1].subresource == "status"
    labelled = v1.patch_node(name, {"metadata": {"labels": {"extra": "y"}}})
    assert labelled.metadata.labels["extra"] == "y"
    status = v1.delete_node(name)  # the client returns this Status as a plain dict
    assert status["status"] == "Success" and status["details"]["kind"] == "nodes"
    created = v1.create_node({"metadata": {"name": "new-node", "labels": {"a": "b"}},
                              "status": {"capacity": {"cpu": "4", "pods": "110"}}})
    assert created.status.capacity["cpu"] == "4"
    assert created.status.daemon_endpoints.kubelet_endpoint.port == 0


def test_watch_sees_changes_and_bookmarks(sim, v1):
    sim.settings.bookmark_interval = 0.3
    rv = v1.list_namespaced_pod("default").metadata.resource_version
    v1.create_namespaced_pod("default", pending_pod_body("w1"))
    v1.patch_namespaced_pod("w1", "default", {"metadata": {"labels": {"x": "1"}}})
    v1.delete_namespaced_pod("w1", "default")
    seen = []
    for event in watch.Watch().stream(v1.list_namespaced_pod, "default", resource_version=rv,
                                      allow_watch_bookmarks=True, timeout_seconds=1):
        obj = event["object"]  # a BOOKMARK's object stays a dict in the client
        seen.append((event["type"], obj["metadata"] if isinstance(obj, dict)
                     else obj.metadata.name))
    assert seen[:4] == [("ADDED", "w1"), ("MODIFIED", "w1"), ("MODIFIED", "w1"),
                        ("DELETED", "w1")]
    assert seen[4:] and all(t == "BOOKMARK" for t, _ in seen[4:])
    assert int(seen[-1][1]["resourceVersion"]) >= int(rv) + 4


def test_watch_without_resource_version_starts_with_added(sim, v1):
    events = list(watch.Watch().stream(v1.list_node, timeout_seconds=1))
    assert [e["type"] for e in events] == ["ADDED"] * 12


def test_watch_from_compacted_version_raises_410(sim, v1):
    with pytest.raises(ApiException) as e:
        for _ in watch.Watch().stream(v1.list_namespaced_pod, "default", resource_version="1",
                                      timeout_seconds=2):
            pass
    assert e.value.status == 410


def test_compact_expires_watches_lists_and_continue_tokens(sim, v1):
    old = v1.list_pod_for_all_namespaces(limit=10)
    v1.create_namespaced_pod("default", pending_pod_body("c1"))
    rv = sim.resource_version
    sim.compact()
    v1.create_namespaced_pod("default", pending_pod_body("c2"))
    for call in (lambda: v1.list_pod_for_all_namespaces(limit=10,
                                                        _continue=old.metadata._continue),
                 lambda: v1.list_pod_for_all_namespaces(resource_version=str(rv - 1),
                                                        resource_version_match="Exact")):
        with pytest.raises(ApiException) as e:
            call()
        assert e.value.status == 410
    with pytest.raises(ApiException) as e:
        list(watch.Watch().stream(v1.list_namespaced_pod, "default", resource_version=str(rv - 1),
                                  timeout_seconds=2))
    assert e.value.status == 410
    # resuming from the compaction point itself still works
    events = list(watch.Watch().stream(v1.list_namespaced_pod, "default",
                                       resource_version=str(rv), timeout_seconds=1))
    assert [(e["type"], e["object"].metadata.name) for e in events] == [("ADDED", "c2")]


def test_list_at_an_exact_older_version_is_that_snapshot(sim, v1):
    v1.create_namespaced_pod("default", pending_pod_body("e1"))
    rv = v1.list_namespaced_pod("default").metadata.resource_version
    v1.patch_namespaced_pod("e1", "default", {"metadata": {"labels": {"later": "1"}}})
    v1.create_namespaced_pod("default", pending_pod_body("e2"))
    v1.delete_namespaced_pod("e1", "default")
    then = v1.list_namespaced_pod("default", resource_version=rv,
                                  resource_version_match="Exact")
    assert then.metadata.resource_version == rv
    assert [(p.metadata.name, p.metadata.labels) for p in then.items] == [
        ("e1", {"app": "e1"})]


def test_raw_list_and_raw_watch(sim, v1):
    resp = v1.list_pod_for_all_namespaces(_preload_content=False)
    data = orjson.loads(resp.data)
    assert data["kind"] == "PodList" and len(data["items"]) == 150
    assert "kind" not in data["items"][0]
    rv = data["metadata"]["resourceVersion"]
    v1.create_namespaced_pod("default", pending_pod_body("r1"))
    events = list(watch.Watch().stream(v1.list_pod_for_all_namespaces, resource_version=rv,
                                       timeout_seconds=1, deserialize=False))
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "r1")]
    assert isinstance(events[0]["object"], dict)


def test_assigned_pods_watch_sees_binding_as_added_and_delete(sim, v1):
    rv = v1.list_pod_for_all_namespaces(field_selector="spec.nodeName!=").metadata.resource_version
    v1.create_namespaced_pod("default", pending_pod_body("a1"))
    node = first_bound(sim)["spec"]["nodeName"]
    v1.create_namespaced_pod_binding("a1", "default", {"metadata": {"name": "a1"},
                                                       "target": {"name": node}},
                                     _preload_content=False)
    v1.delete_namespaced_pod("a1", "default", grace_period_seconds=0)
    events = [(e["type"], e["object"].metadata.name) for e in watch.Watch().stream(
        v1.list_pod_for_all_namespaces, field_selector="spec.nodeName!=", resource_version=rv,
        timeout_seconds=1)]
    assert events == [("ADDED", "a1"), ("MODIFIED", "a1"), ("DELETED", "a1")]


def test_asyncio_client_lists_binds_and_watches(sim):
    from kubernetes.aio import client as aclient, watch as awatch

    async def scenario():
        async with aclient.ApiClient(aclient.Configuration(host=sim.url)) as api:
            v1 = aclient.CoreV1Api(api)
            rv = (await v1.list_pod_for_all_namespaces(limit=5)).metadata.resource_version
            await v1.create_namespaced_pod("default", pending_pod_body("aio"))
            resp = await v1.create_namespaced_pod_binding_without_preload_content(
                "aio", "default", {"metadata": {"name": "aio"}, "target": {"name": "n1"}})
            assert resp.status == 201
            events = [(e["type"], e["object"].metadata.name) async for e in awatch.Watch().stream(
                v1.list_pod_for_all_namespaces, resource_version=rv, timeout_seconds=1)]
            assert events == [("ADDED", "aio"), ("MODIFIED", "aio")]
            with pytest.raises(aclient.ApiException) as e:
                async for _ in awatch.Watch().stream(v1.list_pod_for_all_namespaces,
                                                     resource_version="1", timeout_seconds=1):
                    pass
            assert e.value.status == 410

    asyncio.run(scenario())
