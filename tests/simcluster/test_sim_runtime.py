"""Faults, churn, the simulated kubelet, the control endpoints, kill/restore and the CLI."""

import http.client
import os
import queue
import subprocess
import sys
import threading
import time
from urllib.parse import urlsplit

import orjson
import pytest
from kubernetes import watch
from kubernetes.client.rest import ApiException
from urllib3.exceptions import ProtocolError, ReadTimeoutError

from tests.simcluster.simhelpers import Raw, pending_pod_body
from tests.waiting import wait_for


def bind_body(name, node):
    return {"metadata": {"name": name}, "target": {"kind": "Node", "name": node}}


def a_node(sim):
    return sim.nodes()[0]["metadata"]["name"]


def test_bind_faults_fail_or_conflict_without_touching_the_pod(sim, v1):
    v1.create_namespaced_pod("default", pending_pod_body("f1"))
    sim.faults.update(bind_failure_rate=1.0)
    with pytest.raises(ApiException) as e:
        v1.create_namespaced_pod_binding("f1", "default", bind_body("f1", a_node(sim)),
                                         _preload_content=False)
    assert e.value.status == 500
    sim.faults.update(bind_failure_code=409)
    with pytest.raises(ApiException) as e:
        v1.create_namespaced_pod_binding("f1", "default", bind_body("f1", a_node(sim)),
                                         _preload_content=False)
    assert e.value.status == 409
    assert "nodeName" not in sim.pod("default", "f1")["spec"]
    sim.faults.update(bind_failure_rate=0.0, bind_delay=0.3)
    started = time.monotonic()
    v1.create_namespaced_pod_binding("f1", "default", bind_body("f1", a_node(sim)),
                                     _preload_content=False)
    assert time.monotonic() - started >= 0.3
    assert sim.pod("default", "f1")["spec"]["nodeName"] == a_node(sim)


def test_a_refused_binding_is_a_403_as_an_admission_policy_answers(sim, raw, v1):
    """kube-apiserver's Status for a denied create (shaped as 45-binding-missing-pod-404:
    resource "pods"); the pod is left unbound, and the Binding goes through once the
    refusal lifts."""
    v1.create_namespaced_pod("default", pending_pod_body("r1"))
    node = a_node(sim)
    resp, data = raw.call("POST", "/simcluster/v1/faults",
                          {"binding_refused_namespaces": "default"})
    assert resp.status == 200 and orjson.loads(data)["binding_refused_namespaces"] == "default"
    resp, data = raw.call("POST", "/api/v1/namespaces/default/pods/r1/binding",
                          bind_body("r1", node))
    assert (resp.status, resp.reason) == (403, "Forbidden")
    assert resp.getheader("Content-Type") == "application/json"
    assert orjson.loads(data) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'pods "r1" is forbidden: ValidatingAdmissionPolicy '
                   "'simcluster-deny-binding' with binding 'simcluster-deny-binding' denied "
                   "request: binding pods in namespace default is not allowed",
        "reason": "Forbidden", "details": {"name": "r1", "kind": "pods"}, "code": 403}
    assert "nodeName" not in sim.pod("default", "r1")["spec"]

    sim.faults.update(binding_refused_namespaces="other", binding_refusal_rate=1.0)
    with pytest.raises(ApiException) as e:
        v1.create_namespaced_pod_binding("r1", "default", bind_body("r1", node),
                                         _preload_content=False)
    assert e.value.status == 403 and orjson.loads(e.value.body)["reason"] == "Forbidden"
    sim.faults.update(binding_refusal_rate=0.0)
    v1.create_namespaced_pod_binding("r1", "default", bind_body("r1", node),
                                     _preload_content=False)
    assert sim.pod("default", "r1")["spec"]["nodeName"] == node


def test_silent_watches_say_nothing_until_the_knob_is_off(sim, v1):
    """A hung API server (issue 22): the watch's connection stays open, and neither the
    pod created meanwhile nor a bookmark reaches it; off again, the watch goes on."""
    sim.settings.bookmark_interval = 0.1
    rv = v1.list_namespaced_pod("default").metadata.resource_version
    sim.faults.update(silent_watches=True)
    v1.create_namespaced_pod("default", pending_pod_body("hushed"))
    heard = []
    with pytest.raises((ReadTimeoutError, ProtocolError)):
        for event in watch.Watch().stream(v1.list_namespaced_pod, "default",
                                          resource_version=rv, allow_watch_bookmarks=True,
                                          timeout_seconds=5, _request_timeout=(5, 1)):
            heard.append(event["type"])
    assert heard == []
    sim.faults.update(silent_watches=False)
    events = [e["object"].metadata.name for e in watch.Watch().stream(
        v1.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=1)]
    assert events == ["hushed"]


def test_fault_knobs_refuse_bad_values(sim, raw):
    resp, data = raw.call("POST", "/simcluster/v1/faults",
                          {"binding_refused_namespaces": ["default"]})
    assert resp.status == 400 and b"takes a string" in data
    assert sim.faults.binding_refused_namespaces == ""
    resp, data = raw.call("POST", "/simcluster/v1/faults", {"silent_watches": "yes"})
    assert resp.status == 400 and b"takes true or false" in data
    assert sim.faults.silent_watches is False


def test_lost_events_change_the_store_but_never_reach_watchers(sim, v1):
    rv = v1.list_namespaced_pod("default").metadata.resource_version
    sim.faults.update(lose_event_rate=1.0)
    v1.create_namespaced_pod("default", pending_pod_body("lost"))
    sim.faults.update(lose_event_rate=0.0)
    v1.create_namespaced_pod("default", pending_pod_body("seen"))
    assert sim.pod("default", "lost") is not None
    events = [e["object"].metadata.name for e in watch.Watch().stream(
        v1.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=1)]
    assert events == ["seen"]


def open_watch(sim, path):
    parts = urlsplit(sim.url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    conn.request("GET", path)
    resp = conn.getresponse()
    assert resp.status == 200
    return conn, resp


def test_drop_watches_ends_streams_cleanly_or_abruptly(sim):
    rv = sim.resource_version
    conn, resp = open_watch(sim, f"/api/v1/pods?watch=true&resourceVersion={rv}"
                                 "&timeoutSeconds=60")
    conn2, resp2 = open_watch(sim, f"/api/v1/nodes?watch=true&resourceVersion={rv}"
                                   "&timeoutSeconds=60")
    wait_for(lambda: sim.watchers.count() == 2, 10, "both watches served")
    assert sim.drop_watches() == 2
    assert resp.read() == b"" and resp2.read() == b""  # final chunk: a clean end
    conn, resp = open_watch(sim, f"/api/v1/pods?watch=true&resourceVersion={rv}"
                                 "&timeoutSeconds=60")
    wait_for(lambda: sim.watchers.count() == 1, 10, "the watch served")
    sim.drop_watches(abrupt=True)
    with pytest.raises(http.client.IncompleteRead):
        resp.read()


def test_client_watch_without_timeout_comes_back_after_a_drop(sim, v1):
    rv = v1.list_namespaced_pod("default").metadata.resource_version
    w = watch.Watch()
    seen = queue.Queue()

    def consume():
        for event in w.stream(v1.list_namespaced_pod, "default", resource_version=rv):
            seen.put(event["object"].metadata.name)
            if event["object"].metadata.name == "after":
                w.stop()
    thread = threading.Thread(target=consume, daemon=True)
    thread.start()
    wait_for(lambda: sim.watchers.opened == 1, 10, "the watch")
    v1.create_namespaced_pod("default", pending_pod_body("before"))
    assert seen.get(timeout=10) == "before"
    sim.drop_watches()
    wait_for(lambda: sim.watchers.opened == 2, 10,   # the client re-watched from its last rv
             "the second watch")
    v1.create_namespaced_pod("default", pending_pod_body("after"))
    assert seen.get(timeout=10) == "after"
    thread.join(timeout=10)
    assert seen.empty()


def test_history_is_compacted_by_time_one_interval_behind(sim):
    # kube-apiserver's compactor: each tick compacts to the version noted at the tick
    # before, however many events came between (captures 36, 95, 99: 410 only then)
    raw = Raw(sim.url)
    listed = sim.resource_version
    for i in range(30):
        raw.call("POST", "/api/v1/namespaces/default/pods", pending_pod_body(f"h{i}"))
    assert sim.compactor.tick() == 0             # nothing noted yet: nothing compacted
    noted = sim.resource_version
    raw.call("POST", "/api/v1/namespaces/default/pods", pending_pod_body("after-tick"))

    def watch_types(rv):
        _, body = raw.call("GET", f"/api/v1/pods?watch=true&resourceVersion={rv}"
                                  "&timeoutSeconds=1")
        return [orjson.loads(line)["type"] for line in body.splitlines()]

    assert watch_types(listed) == ["ADDED"] * 31   # 31 events on: all kept
    assert sim.compactor.tick() == noted
    assert watch_types(listed) == ["ERROR"]        # before the compacted version: 410
    assert watch_types(noted) == ["ADDED"]         # after it: kept


def test_the_cluster_compacts_on_its_own_every_interval(small_cluster):
    from simcluster import SimCluster
    with SimCluster(cluster=small_cluster, kubelet=False, compaction_interval=0.05) as sim:
        raw = Raw(sim.url)
        raw.call("POST", "/api/v1/namespaces/default/pods", pending_pod_body("c0"))
        wait_for(lambda: sim.store.resources["pods"].compacted_rv >= sim.resource_version,
                 10, "two compactions")
        assert sim.store.resources["pods"].events == []


def test_churn_steps_create_bind_delete_and_update(sim):
    sim.churn.update(scheduler=True, weights={"create": 1, "bind": 0, "delete": 0,
                                              "label": 0, "status": 0})
    before = len(sim.pods())
    assert [sim.churn.step() for _ in range(5)] == ["create"] * 5
    assert len(sim.pods()) == before + 5
    sim.churn.update(weights={"create": 0, "bind": 1})
    assert [sim.churn.step() for _ in range(5)] == ["bind"] * 5
    bound = [p for p in sim.pods() if p["spec"].get("nodeName")]
    assert len(bound) == 135 + 5
    sim.churn.update(weights={"bind": 0, "label": 1})
    assert sim.churn.step() == "label"
    assert any("simcluster.io/churn" in (p["metadata"].get("labels") or {})
               for p in sim.pods())
    sim.churn.update(weights={"label": 0, "delete": 1})
    rv = sim.resource_version
    assert sim.churn.step() == "delete"
    assert sim.resource_version > rv
    assert sim.churn.knobs()["counts"] == {"create": 5, "bind": 5, "delete": 1, "label": 1,
                                          "status": 0}


def test_churn_never_deletes_a_kept_pod(sim):
    """The demo's 64-GPU job was gone after some minutes of `make run`: a delete of the
    churn had picked it. A pod labelled simcluster.io/keep stays."""
    raw = Raw(sim.url)
    raw.call("POST", "/api/v1/namespaces/default/pods",
             pending_pod_body("kept", **{"simcluster.io/keep": "true"}))
    sim.churn.update(weights={"create": 0, "bind": 0, "delete": 1, "label": 0, "status": 0})
    before = len(sim.pods())
    for _ in range(before):
        sim.churn.step()
        sim.kubelet.step(float("inf"))     # graceful deletes finish
    names = [p["metadata"]["name"] for p in sim.pods()]
    assert "kept" in names and len(names) < before / 2


def test_steady_churn_holds_the_pod_count(sim):
    """2,000 demo pods grew to 2,755 in 17 minutes: creates outran deletes."""
    start = sim.state()["counts"]["pods"]
    sim.churn.update(steady=True, weights={"create": 3, "delete": 1, "label": 0, "status": 0})
    for _ in range(200):
        sim.churn.step()
        sim.kubelet.step(float("inf"))     # graceful deletes finish
    assert abs(sim.state()["counts"]["pods"] - start) <= 1
    assert sim.churn.counts["create"] > 10 and sim.churn.counts["delete"] > 10
    assert sim.churn.knobs()["steady"] == start
    with pytest.raises(ValueError, match="steady: true"):
        sim.churn.update(steady=5)


def test_churn_thread_runs_at_the_configured_rate(small_cluster):
    from simcluster import SimCluster
    with SimCluster(cluster=small_cluster, kubelet=False, churn=200) as sim:
        rv = sim.resource_version
        wait_for(lambda: sim.resource_version >= rv + 50, 10, "50 changes of churn")
        sim.churn.update(rate=0)
        assert sum(sim.churn.knobs()["counts"].values()) > 0


def test_kubelet_finishes_graceful_deletes_and_starts_bound_pods(sim, v1):
    pod = next(p for p in sim.pods() if p["spec"].get("nodeName"))
    name, ns = pod["metadata"]["name"], pod["metadata"]["namespace"]
    v1.delete_namespaced_pod(name, ns)
    v1.create_namespaced_pod("default", pending_pod_body("k1"))
    v1.create_namespaced_pod_binding("k1", "default", bind_body("k1", a_node(sim)),
                                     _preload_content=False)
    kubelet = sim.kubelet
    kubelet.update(finish_deletes=True, start_pods=True, start_delay=1.0)
    now = time.time()
    assert kubelet.step(now) == 0  # nothing due yet
    assert kubelet.step(now + 2) == 1  # k1 starts
    started = sim.pod("default", "k1")
    assert started["status"]["phase"] == "Running"
    assert started["status"]["podIP"].startswith("10.")
    assert started["status"]["containerStatuses"][0]["ready"] is True
    assert started["metadata"]["managedFields"][-1]["manager"] == "kubelet"
    assert sim.pod(ns, name) is not None
    assert kubelet.step(now + 32) == 1  # the grace period is over
    assert sim.pod(ns, name) is None


def test_kubelet_grace_cap_shortens_the_wait(sim, v1):
    pod = next(p for p in sim.pods() if p["spec"].get("nodeName"))
    sim.kubelet.update(grace_cap=1.0, start_pods=False)
    v1.delete_namespaced_pod(pod["metadata"]["name"], pod["metadata"]["namespace"])
    now = time.time()
    assert sim.kubelet.step(now) == 0
    assert sim.kubelet.step(now + 1.5) == 1
    assert sim.pod(pod["metadata"]["namespace"], pod["metadata"]["name"]) is None


def test_control_endpoints(sim, raw):
    resp, body = raw.call("GET", "/simcluster/v1/state")
    state = orjson.loads(body)
    assert state["counts"]["pods"] == 150 and state["faults"]["bind_failure_rate"] == 0
    assert state["history"]["pods"] == 0
    sim.churn.update(weights={"create": 0, "delete": 0, "label": 1, "status": 0})
    sim.churn.step()
    _, body = raw.call("GET", "/simcluster/v1/state")
    assert orjson.loads(body)["history"]["pods"] == 1   # the bench's measure of what is kept
    resp, body = raw.call("POST", "/simcluster/v1/faults", {"lose_event_rate": 0.5})
    assert orjson.loads(body)["lose_event_rate"] == 0.5 and sim.faults.lose_event_rate == 0.5
    resp, _ = raw.call("POST", "/simcluster/v1/faults", {"nonsense": 1})
    assert resp.status == 400
    resp, body = raw.call("POST", "/simcluster/v1/churn", {"rate": 0, "scheduler": True})
    assert orjson.loads(body)["scheduler"] is True and sim.churn.scheduler
    resp, body = raw.call("POST", "/simcluster/v1/kubelet", {"grace_cap": 2})
    assert sim.kubelet.grace_cap == 2
    rv = sim.resource_version
    resp, body = raw.call("POST", "/simcluster/v1/compact", {})
    assert orjson.loads(body) == {"resourceVersion": str(rv)}
    resp, body = raw.call("POST", "/simcluster/v1/drop-watches", {})
    assert orjson.loads(body) == {"dropped": 0}


def reachable(raw) -> bool:
    try:
        raw.call("GET", "/version")
        return True
    except OSError:
        return False


def test_kill_and_restore(sim, raw):
    rv = sim.resource_version
    sim.kill()
    assert not reachable(raw)
    sim.restore()
    assert reachable(raw) and sim.resource_version == rv
    resp, body = raw.call("POST", "/simcluster/v1/kill", {"seconds": 0.3})
    assert orjson.loads(body) == {"down_for_seconds": 0.3}
    wait_for(lambda: not reachable(raw), 10, "the server down")
    wait_for(lambda: reachable(raw), 10, "the server back")


def test_cli_serves_and_writes_a_kubeconfig(tmp_path):
    kubeconfig = tmp_path / "kc"
    proc = subprocess.Popen(
        [sys.executable, "-m", "simcluster", "serve", "--port", "0", "--nodes", "5",
         "--pods", "40", "--zones", "2", "--seed", "3", "--churn", "5",
         "--kubeconfig", str(kubeconfig)],
        stdout=subprocess.PIPE, text=True, cwd=os.path.dirname(os.path.dirname(
            os.path.dirname(os.path.abspath(__file__)))))
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        assert url in kubeconfig.read_text()
        resp, body = Raw(url).call("GET", "/api/v1/nodes")
        assert len(orjson.loads(body)["items"]) == 5
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0
