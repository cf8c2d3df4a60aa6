"""A scheduling run over the simulated cluster, the test acting as kube-scheduler.

Every part is a real process (simulated cluster, cache owner, Celery worker and
beat, the web under daphne); the test speaks to the owner's own extender listener
over HTTP with the JSON kube-scheduler's HTTPExtender sends (nodeCacheCapable:
NodeNames), and does what kube-scheduler does with the answers (shared
k8s-wire/extender): bind where filter left one node, and a bind answered success
has made its Binding (07); a pod its own filters find no room for goes straight to
`preempt` with its own candidate victims (03a), and the victims answered are deleted;
retry later otherwise.

The run: four pods spread over two fresh nodes, a pod of the same priority waits
(its reasons per node in FailedNodes), a high-priority pod, never filtered, preempts
one of the four and binds once the victim is gone; at the end the comparer finds the
cache equal to the cluster and every bound pod's status is Bound (the REST API says so).
"""
import socket
import sys

import orjson
import pytest
from kubernetes import client, config

from simcluster.generate import make_node

from dashboard.clients.owner_client import send
from dashboard.models import ComparerRun
from dashboard.wire.commands import CommandError
from tests.live.livestack import synced_owner
from tests.waiting import wait_for

pytestmark = pytest.mark.timeout(300)

POOL = {"schedview.io/e2e-pool": "yes"}
NODE_CPU = 4000          # millicores allocatable on each pool node
LOW, HIGH = 10, 1000     # priorities


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_web(stack) -> str:
    port = free_port()
    stack.start("web", [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                        "dashboard.asgi:application"])
    url = f"http://127.0.0.1:{port}"

    def answers():
        try:
            return stack.http.request("GET", f"{url}/accounts/login/", retries=False).status
        except Exception:
            return None
    wait_for(answers, 60, "the web to listen")
    return url


def core(stack):
    return client.CoreV1Api(config.new_client_from_config(
        config_file=stack.env["SCHEDVIEW_KUBECONFIG"]))


def add_pool_node(api, name, zone):
    node = make_node(name, zone=zone, labels=POOL,
                     allocatable={"cpu": f"{NODE_CPU}m", "memory": "16Gi", "pods": "110",
                                  "ephemeral-storage": "50Gi"})
    for key in ("uid", "resourceVersion", "creationTimestamp"):
        node["metadata"].pop(key, None)
    api.create_node(node)


def add_pod(api, name, cpu_m, priority):
    spec = {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": {"cpu": f"{cpu_m}m",
                                                       "memory": "64Mi"}}}],
            "nodeSelector": POOL, "priority": priority, "terminationGracePeriodSeconds": 1}
    pod = api.create_namespaced_pod("default", {"apiVersion": "v1", "kind": "Pod",
                                                "metadata": {"name": name}, "spec": spec})
    return pod.metadata.uid


def cache_state(uid):
    try:
        return send("get_pod", {"uid": uid}, timeout=5)["state"]
    except CommandError as error:
        return "gone" if error.status == 404 else None


def status(uid):
    return send("extender_status", {"uid": uid}, timeout=5)


class KubeScheduler:
    """The parts of kube-scheduler's scheduling cycle that talk to an HTTP extender
    configured with filterVerb, bindVerb, preemptVerb and nodeCacheCapable: true."""

    def __init__(self, stack, url_prefix, api):
        self.http, self.url, self.api = stack.http, url_prefix, api

    def call(self, verb, body):
        response = self.http.request("POST", f"{self.url}/{verb}",
                                     body=orjson.dumps(body),
                                     headers={"Content-Type": "application/json"})
        assert response.status == 200, (verb, response.status, response.data)
        return orjson.loads(response.data)

    def pod(self, name):
        """The pod as kube-scheduler's informer holds it: the API server's JSON."""
        response = self.api.read_namespaced_pod(name, "default", _preload_content=False)
        return orjson.loads(response.data)

    def node_names(self):
        return [n.metadata.name for n in self.api.list_node().items]

    def filter(self, name):
        return self.call("filter", {"Pod": self.pod(name), "Nodes": None,
                                    "NodeNames": self.node_names()})

    def schedule(self, name):
        """One scheduling cycle: ("bound", node) | ("preempted", victims) | ("unschedulable",
        the filter result)."""
        pod = self.pod(name)
        result = self.filter(name)
        assert result["Error"] == "", result
        if result["NodeNames"]:
            [node] = result["NodeNames"]
            meta = pod["metadata"]
            bound = self.call("bind", {"PodName": meta["name"], "PodNamespace": meta["namespace"],
                                       "PodUID": meta["uid"], "Node": node})
            assert bound == {"Error": ""}
            # answered only once the Binding was made: the API server has it already
            assert self.pod(name)["spec"]["nodeName"] == node
            return "bound", node
        if result["FailedNodes"] and pod["spec"].get("preemptionPolicy") != "Never":
            victims = self.preempt(pod, result["FailedNodes"])
            if victims:
                return "preempted", victims
        return "unschedulable", result

    def preempt(self, pod, failed_nodes):
        """DefaultPreemption over the candidate nodes: its own candidates (the node's pods of
        lower priority) go to the extender, which answers the victims to delete."""
        priority = pod["spec"].get("priority", 0)
        candidates = {}
        for node in failed_nodes:
            pods = self.api.list_pod_for_all_namespaces(
                field_selector=f"spec.nodeName={node}").items
            lower = [p.metadata.uid for p in pods if (p.spec.priority or 0) < priority]
            if lower:
                candidates[node] = {"Pods": [{"UID": uid} for uid in lower],
                                    "NumPDBViolations": 0}
        answer = self.call("preempt", {"Pod": pod, "NodeNameToVictims": None,
                                       "NodeNameToMetaVictims": candidates})
        chosen = sorted(answer["NodeNameToMetaVictims"].items(),
                        key=lambda item: len(item[1]["Pods"]))
        if not chosen:
            return []
        uids = {victim["UID"] for victim in chosen[0][1]["Pods"]}
        pods = self.api.list_pod_for_all_namespaces(
            field_selector=f"spec.nodeName={chosen[0][0]}").items
        victims = [p for p in pods if p.metadata.uid in uids]
        for victim in victims:   # kube-scheduler deletes them gracefully
            self.api.delete_namespaced_pod(victim.metadata.name, victim.metadata.namespace)
        return [v.metadata.uid for v in victims]


def rest_statuses(stack, url, token, state):
    """The statuses REST endpoint of the web process, as a tool reads it."""
    response = stack.http.request("GET", f"{url}/api/v1/statuses?state={state}&per_page=100",
                                  headers={"Authorization": f"Bearer {token}"})
    assert response.status == 200, response.data
    return {s["uid"]: s for s in orjson.loads(response.data)["items"]}


def test_pods_wait_preempt_and_bind_until_cache_and_statuses_agree(stack, api_token):
    stack.owner("owner-a")
    nodes = synced_owner()["nodes"]
    api = core(stack)
    add_pool_node(api, "pool-a", "zone-e2e-1")
    add_pool_node(api, "pool-b", "zone-e2e-2")
    url = start_web(stack)
    wait_for(lambda: send("status", timeout=5)["nodes"] == nodes + 2, 30,
             "the pool nodes in the cache")
    scheduler = KubeScheduler(stack, stack.extender(), api)

    # Four pods arrive and spread over the pool: the zone round robin alternates nodes.
    small = {f"small-{i}": add_pod(api, f"small-{i}", 1500, LOW) for i in range(4)}
    wait_for(lambda: all(cache_state(u) == "Pending" for u in small.values()), 30,
             "the pending pods in the cache")
    placed = {}
    for name in small:
        outcome, node = scheduler.schedule(name)
        assert outcome == "bound"
        placed[name] = node
    assert sorted(placed.values()) == ["pool-a", "pool-a", "pool-b", "pool-b"]
    wait_for(lambda: all(status(u)["state"] == "Bound" for u in small.values()), 60,
             "the watch to confirm the binds")

    # A pod of the same priority has no room (1000m free per node) and nothing to evict.
    waiter = add_pod(api, "waiter", 2000, LOW)
    wait_for(lambda: cache_state(waiter) == "Pending", 30, "the waiter in the cache")
    outcome, result = scheduler.schedule("waiter")
    assert outcome == "unschedulable"
    assert result["NodeNames"] == []
    assert result["FailedNodes"]["pool-a"] == "Insufficient cpu"
    assert result["FailedNodes"]["pool-b"] == "Insufficient cpu"
    assert set(result["FailedNodes"]) == set(scheduler.node_names())
    others = set(scheduler.node_names()) - {"pool-a", "pool-b"}
    # The others refuse at the first filter in upstream's order: taints, then the selector.
    assert {result["FailedNodes"][n] for n in others} <= {
        "node(s) didn't match Pod's node affinity/selector",
        "node(s) had untolerated taint {dedicated: infra}"}
    waiting = status(waiter)
    assert waiting["state"] == "Waiting"
    assert waiting["wait_reasons"] == result["FailedNodes"]

    # A high-priority pod that kube-scheduler's own filters find no room for: preempt is
    # the extender's first call for it (03a). It evicts one small pod, then binds there.
    vip = add_pod(api, "vip", 2500, HIGH)
    wait_for(lambda: cache_state(vip) == "Pending", 30, "the vip in the cache")
    victims = scheduler.preempt(scheduler.pod("vip"), ["pool-a", "pool-b"])
    assert len(victims) == 1
    [victim] = victims
    assert victim in small.values()
    preempting = status(vip)
    assert preempting["state"] == "Preempting"
    victim_node = preempting["node"]
    assert [v["uid"] for v in preempting["victims"][victim_node]] == [victim]
    wait_for(lambda: cache_state(victim) == "gone", 60, "the victim to leave the cache")
    assert status(victim)["state"] == "Unknown"
    outcome, node = scheduler.schedule("vip")
    assert (outcome, node) == ("bound", victim_node)

    # The waiter still finds no room: 1000m free on one node, none on the other.
    outcome, result = scheduler.schedule("waiter")
    assert outcome == "unschedulable"
    assert set(result["FailedNodes"][n] for n in ("pool-a", "pool-b")) == {"Insufficient cpu"}

    # The end: the cluster, the cache and the statuses agree.
    bound = {uid for uid in small.values() if uid != victim} | {vip}
    wait_for(lambda: all(status(u)["state"] == "Bound" for u in bound), 60, "every bind")
    wait_for(lambda: all(cache_state(u) == "Added" for u in bound), 60, "confirmations")
    by_uid = {p.metadata.uid: p for p in api.list_namespaced_pod("default").items}
    for uid in bound:
        assert by_uid[uid].spec.node_name == status(uid)["node"]
    assert victim not in by_uid
    assert by_uid[waiter].spec.node_name is None and status(waiter)["state"] == "Waiting"
    assert set(rest_statuses(stack, url, api_token, "Bound")) == bound
    assert set(rest_statuses(stack, url, api_token, "Waiting")) == {waiter}
    ComparerRun.objects.all().delete()
    send("compare", {}, timeout=5)
    run = wait_for(lambda: ComparerRun.objects.first(), 60, "a comparison")
    assert run.clean, run.report

