"""deploy/'s NetworkPolicies: only kube-scheduler reaches the owner's extender port, only
the ingress controller reaches the web, and the web believes forwarded addresses from
that ingress alone (its daphne no longer believes any peer's)."""
import ipaddress

import pytest

from tests.deploy.manifests import OVERLAYS, configmap_env, container, of_kind, rendered

KUBE_SCHEDULER = {"namespaceSelector": {"matchExpressions": [
                      {"key": "kubernetes.io/metadata.name", "operator": "In",
                       "values": ["kube-system"]}]},
                  "podSelector": {"matchExpressions": [
                      {"key": "component", "operator": "In", "values": ["kube-scheduler"]}]}}
INGRESS = {"namespaceSelector": {"matchExpressions": [
               {"key": "kubernetes.io/metadata.name", "operator": "In",
                "values": ["ingress-nginx"]}]},
           "podSelector": {"matchExpressions": [
               {"key": "app.kubernetes.io/name", "operator": "In",
                "values": ["ingress-nginx"]}]}}


def selected(policy: dict, workload: dict) -> bool:
    """Whether the policy's pod selector picks the workload's pods (matchLabels only)."""
    selector = policy["spec"]["podSelector"]
    assert selector.keys() == {"matchLabels"}
    labels = workload["spec"]["template"]["metadata"]["labels"]
    return selector["matchLabels"].items() <= labels.items()


def who_reaches(policy: dict, workload: dict, port: int) -> list:
    """The peers a policy lets reach the workload's container `port`: None for anyone."""
    ports = {p["name"]: p["containerPort"] for p in container(workload)["ports"]}
    peers = []
    for rule in policy["spec"]["ingress"]:
        opened = [ports.get(p["port"], p["port"]) for p in rule.get("ports", [])]
        if not opened or port in opened:           # no ports: every port
            peers.extend(rule.get("from") or [None])
    return peers


def policy_of(objects, name: str) -> tuple[dict, dict]:
    policies = of_kind(objects, "NetworkPolicy")
    workload = of_kind(objects, "Deployment")[f"schedview-{name}"]
    (policy,) = [p for p in policies.values() if selected(p, workload)]
    assert "Ingress" in policy["spec"]["policyTypes"]
    return policy, workload


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_only_kube_scheduler_reaches_the_extender_port(overlay):
    objects = rendered(overlay)
    policy, owner = policy_of(objects, "owner")
    extender = int(configmap_env(objects)["SCHEDVIEW_EXTENDER_ADDRESS"].rpartition(":")[2])
    assert who_reaches(policy, owner, extender) == [KUBE_SCHEDULER]
    probes = int(configmap_env(objects)["SCHEDVIEW_PROBE_ADDRESS"].rpartition(":")[2])
    assert who_reaches(policy, owner, probes) == [None]     # kubelets and Prometheus


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_only_the_ingress_reaches_the_web(overlay):
    policy, web = policy_of(rendered(overlay), "web")
    (port,) = [p["containerPort"] for p in container(web)["ports"]]
    assert who_reaches(policy, web, port) == [INGRESS]


def test_the_check_can_fail():
    """A rule without ports opens every port to its peers: the extender too."""
    objects = rendered("small")
    policy, owner = policy_of(objects, "owner")
    opened = {**policy, "spec": {**policy["spec"], "ingress": [
        *policy["spec"]["ingress"], {"from": [INGRESS]}]}}
    assert who_reaches(opened, owner, 8101) == [KUBE_SCHEDULER, INGRESS]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_web_believes_forwarded_addresses_only_from_configured_proxies(overlay):
    objects = rendered(overlay)
    command = container(of_kind(objects, "Deployment")["schedview-web"])["command"]
    assert command[0] == "daphne" and "--proxy-headers" not in command
    proxies = configmap_env(objects)["SCHEDVIEW_TRUSTED_PROXIES"].split(",")
    assert proxies and all(ipaddress.ip_network(p).is_private for p in proxies)
