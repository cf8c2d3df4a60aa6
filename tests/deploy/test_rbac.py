"""Each role's ClusterRole grants exactly the Kubernetes API calls its code makes.

The calls are found in the source (the kubernetes client's methods, and the requests
dashboard/kube/kube_http.py sends for a Binding or a claim), each is mapped to the roles whose process makes it and to the RBAC
verbs it needs; a call the table does not know fails the test, so a new call cannot
ship without its permission being decided."""
import re
from collections import defaultdict
from pathlib import Path

import pytest
from kubernetes import client

from tests.deploy.manifests import OVERLAYS, configmap_env, container, of_kind, rendered
from tests.packages import app_packages

ROOT = Path(__file__).resolve().parents[2]
# The simulated cluster serves the API (its handlers share the calls' names); the rest call it.
SOURCES = [package for package in app_packages() if package != "simcluster"]
# Every API call the kubernetes client offers (each API group's methods).
API_METHODS = {name for api in dir(client) if api.endswith("Api") and api != "ApiClient"
               for name in dir(getattr(client, api))
               if re.match(r"(connect|create|delete|list|patch|read|replace)_", name)
               and not name.endswith("_with_http_info")}
CLIENT_CALL = re.compile(r"\.(\w+)\b")
# kube_http: request("POST", pod_path(namespace, name, "binding"), ...) -> "POST pods/binding"
RAW_REQUEST = re.compile(r"\.request\(\"([A-Z]+)\", pod_path\([^)\"]*(?:\"(\w+)\")?\)")

# (module, call) -> (roles making it in a cluster, (resource, verbs) it needs).
# The reflector's list call is also its watch (watch=true on the same path).
CALLS = {
    ("dashboard/kube/reflector.py", "list_node"): ({"owner"}, ("nodes", {"list", "watch"})),
    ("dashboard/kube/reflector.py", "list_pod_for_all_namespaces"):
        ({"owner", "pools"}, ("pods", {"list", "watch"})),
    # the owner's claims (the stand-in's too, which no deployment runs)
    ("dashboard/kube/reflector.py", "list_persistent_volume_claim_for_all_namespaces"):
        ({"owner"}, ("persistentvolumeclaims", {"list", "watch"})),
    # The Binding and its read-back after a 409: the owner's listener posts kube-scheduler's
    # binds, the worker's Celery tasks the others.
    ("dashboard/kube/binding.py", "POST pods/binding"): ({"owner", "worker"}, ("pods/binding", {"create"})),
    ("dashboard/kube/binding.py", "GET pods"): ({"owner", "worker"}, ("pods", {"get"})),
    # What a comparison found drifted, fetched again by the owner's decoder (drift_repair.py).
    ("dashboard/owner/decoder.py", "read_namespaced_pod"): ({"owner"}, ("pods", {"get"})),
    ("dashboard/owner/decoder.py", "read_node"): ({"owner"}, ("nodes", {"get"})),
    ("dashboard/poolkeeper/claimer.py", "PATCH pods"): ({"pools"}, ("pods", {"patch"})),
    # Only under `manage.py up` with the simulated cluster: the stand-in for kube-scheduler
    # (SCHEDVIEW_SCHEDULE_PERIOD, unset in the manifests; in a cluster kube-scheduler
    # itself deletes preemption's victims) and the demo's scenes.
    ("dashboard/standin/standin.py", "delete_namespaced_pod"): (set(), None),
    ("dashboard/standin/standin.py", "patch_namespaced_pod_status"): (set(), None),
    ("dashboard/launcher/demo_scenes.py", "create_namespaced_pod"): (set(), None),
    ("dashboard/launcher/demo_scenes.py", "create_namespaced_persistent_volume_claim"):
        (set(), None),
    # `manage.py record`, an operator's command run with their own kubeconfig: no role
    # of the deployment records (it also lists nodes and pods through the reflector).
    ("dashboard/kube/recorder.py", "list_priority_class"): (set(), None),
}
# The Deployment of each role that calls the API.
DEPLOYMENTS = {"owner": "schedview-owner", "worker": "schedview-worker",
               "pools": "schedview-pools"}


def calls_in_source() -> set[tuple[str, str]]:
    found = set()
    for top in SOURCES:
        for path in (ROOT / top).rglob("*.py"):
            text, module = path.read_text(), str(path.relative_to(ROOT))
            found |= {(module, call) for call in CLIENT_CALL.findall(text)
                      if call in API_METHODS}
            found |= {(module, f"{method} pods/{sub}" if sub else f"{method} pods")
                      for method, sub in RAW_REQUEST.findall(text)}
    return found


def needed_rules() -> dict[str, dict[str, set]]:
    """role -> resource -> verbs, from CALLS."""
    needs = defaultdict(lambda: defaultdict(set))
    for roles, need in CALLS.values():
        for role in roles:
            resource, verbs = need
            needs[role][resource] |= verbs
    return needs


def granted(objects, service_account: str) -> dict[str, set]:
    """resource -> verbs the ClusterRoles bound to `service_account` grant (core group)."""
    roles = of_kind(objects, "ClusterRole")
    grants = defaultdict(set)
    for binding in of_kind(objects, "ClusterRoleBinding").values():
        if {"kind": "ServiceAccount", "name": service_account, "namespace": "schedview"} \
                not in binding["subjects"]:
            continue
        for rule in roles[binding["roleRef"]["name"]]["rules"]:
            assert rule["apiGroups"] == [""] and set(rule) == {"apiGroups", "resources", "verbs"}
            for resource in rule["resources"]:
                grants[resource] |= set(rule["verbs"])
    return grants


def test_every_kubernetes_call_in_the_code_is_in_the_table():
    assert calls_in_source() == set(CALLS)


def test_the_table_reads_the_code_it_describes():
    """The scan finds the claimer's PATCH, the Binding and its read-back (it can fail)."""
    found = calls_in_source()
    assert {("dashboard/poolkeeper/claimer.py", "PATCH pods"), ("dashboard/kube/binding.py", "POST pods/binding"),
            ("dashboard/kube/binding.py", "GET pods")} <= found


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_each_role_is_granted_exactly_what_its_code_calls(overlay):
    objects = rendered(overlay)
    needs = needed_rules()
    assert set(needs) == set(DEPLOYMENTS)
    deployments = of_kind(objects, "Deployment")
    for role, deployment in DEPLOYMENTS.items():
        account = deployments[deployment]["spec"]["template"]["spec"]["serviceAccountName"]
        assert granted(objects, account) == needs[role], role


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_roles_that_call_no_api_get_no_token_and_no_grant(overlay):
    objects = rendered(overlay)
    accounts = of_kind(objects, "ServiceAccount")
    workloads = {**of_kind(objects, "Deployment"), **of_kind(objects, "Job")}
    for name, workload in workloads.items():
        if name in DEPLOYMENTS.values():
            continue
        account = workload["spec"]["template"]["spec"]["serviceAccountName"]
        assert accounts[account]["automountServiceAccountToken"] is False, name
        assert granted(objects, account) == {}, name
    # The embedded-only callers stay off: no stand-in for kube-scheduler in a cluster.
    assert "SCHEDVIEW_SCHEDULE_PERIOD" not in configmap_env(objects)
    assert all("SCHEDVIEW_SCHEDULE_PERIOD" not in str(container(w)) for w in workloads.values())
