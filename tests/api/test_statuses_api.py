"""Pod schedule statuses over REST, and kube-scheduler's extender endpoints in the API:
a real owner with its extender on the run's Redis; bad input is a 400 that changes nothing."""
import json

import pytest
from django.test import Client

from dashboard.extender import status_reads
from dashboard.feed.commands import send
from simcluster.generate import make_pod
from tests.extender.statusworld import NAMESPACE, scheduled  # noqa: F401  (fixture)
from apihelpers import error_of

pytestmark = pytest.mark.timeout(60)


def statuses():
    return send("extender_statuses", {}, timeout=5)


def test_list_counts_every_state_and_filters_by_one(api, scheduled):
    body = api.get("/api/v1/statuses").json()
    assert body["counts"] == {"Waiting": 1, "Preempting": 1, "Binding": 1, "Bound": 0}
    assert [s["name"] for s in body["items"]] == ["huge", "placed", "vip"]
    assert (body["count"], body["page"], body["pages"], body["next_page"]) == (3, 1, 1, None)
    waiting = api.get("/api/v1/statuses", {"state": "Waiting"}).json()
    [huge] = waiting["items"]
    assert huge["reasons"] == {"Insufficient cpu": 1,
                               "node(s) had untolerated taint {dedicated: infra}": 1}
    assert "wait_reasons" not in huge
    [vip] = api.get("/api/v1/statuses", {"state": "Preempting"}).json()["items"]
    assert vip["node"] == "n1"
    assert vip["victims"] == {"n1": [{"uid": "uid-low", "namespace": NAMESPACE, "name": "low",
                                      "priority": 1}]}


def test_list_pages_and_a_page_past_the_last_gives_the_last(api, scheduled):
    second = api.get("/api/v1/statuses", {"per_page": 2, "page": 2}).json()
    assert [s["name"] for s in second["items"]] == ["vip"]
    assert (second["page"], second["pages"], second["next_page"]) == (2, 2, None)
    first = api.get("/api/v1/statuses", {"per_page": 2}).json()
    assert first["next_page"] == 2 and len(first["items"]) == 2
    past = api.get("/api/v1/statuses", {"per_page": 2, "page": 9}).json()
    assert past["page"] == 2 and [s["name"] for s in past["items"]] == ["vip"]


def test_one_pod_in_full(api, scheduled):
    huge = api.get(f"/api/v1/statuses/{NAMESPACE}/huge").json()
    assert huge["state"] == "Waiting"
    assert huge["wait_reasons"] == {"n1": "Insufficient cpu",
                                    "n2": "node(s) had untolerated taint {dedicated: infra}"}
    placed = api.get(f"/api/v1/statuses/{NAMESPACE}/placed").json()
    assert (placed["state"], placed["node"], placed["bind_attempts"]) == ("Binding", "n1", 0)
    assert "tracks no pod" in error_of(api.get(f"/api/v1/statuses/{NAMESPACE}/nobody"), 404)
    error_of(api.get("/api/v1/statuses/other/huge"), 404)


@pytest.mark.parametrize("query", [
    {"state": "Sleeping"}, {"page": 0}, {"per_page": 0}, {"per_page": 5000}, {"page": "x"},
])
def test_bad_queries_are_400s_that_change_nothing(api, scheduled, query):
    before = statuses()
    error_of(api.get("/api/v1/statuses", query), 400)
    assert statuses() == before


def test_a_repeated_filter_is_refused(api, scheduled):
    assert "given 2 times" in error_of(api.get("/api/v1/statuses?state=Waiting&state=Bound"), 400)


def test_statuses_need_a_token_or_a_session(scheduled):
    error_of(Client().get("/api/v1/statuses"), 401)
    error_of(Client().get(f"/api/v1/statuses/{NAMESPACE}/huge"), 401)


def test_without_an_owner_it_is_a_503(api, redis_url, monkeypatch):
    monkeypatch.setattr(status_reads, "TIMEOUT", 0.3)
    error_of(api.get("/api/v1/statuses"), 503)
    error_of(api.get(f"/api/v1/statuses/{NAMESPACE}/huge"), 503)


# --- kube-scheduler's endpoints under /api/v1/extender/ ------------------------------------
def extender_call(verb, body, raw=None):
    """As kube-scheduler calls: no login, no CSRF token, JSON in."""
    return Client(enforce_csrf_checks=True).post(
        f"/api/v1/extender/{verb}", data=raw if raw is not None else json.dumps(body),
        content_type="application/json")


def test_kube_scheduler_filters_and_binds_through_the_api_without_login(scheduled):
    pod = make_pod("fresh", namespace=NAMESPACE, uid="uid-fresh", requests={"cpu": "100m"})
    response = extender_call("filter", {"Pod": pod, "Nodes": None, "NodeNames": ["n1", "n2"]})
    assert response.status_code == 200
    assert response.json() == {"Nodes": None, "NodeNames": ["n1"], "FailedNodes": {},
                               "FailedAndUnresolvableNodes": {}, "Error": ""}
    bind = extender_call("bind", {"PodName": "fresh", "PodNamespace": NAMESPACE,
                                  "PodUID": "uid-fresh", "Node": "n1"})
    assert (bind.status_code, bind.json()) == (200, {"Error": ""})
    refused = extender_call("bind", {"PodName": "fresh", "PodNamespace": NAMESPACE,
                                     "PodUID": "uid-fresh", "Node": "n2"})
    assert refused.status_code == 200 and "not n2" in refused.json()["Error"]
    victims = extender_call("preempt", {"Pod": make_pod("vip", namespace=NAMESPACE,
                                                        uid="uid-vip"),
                                        "NodeNameToVictims": None, "NodeNameToMetaVictims": {}})
    assert victims.json() == {"NodeNameToMetaVictims": {
        "n1": {"Pods": [{"UID": "uid-low"}], "NumPDBViolations": 0}}}


def test_a_malformed_extender_request_is_a_400_with_the_extenders_error(scheduled):
    before = statuses()
    response = extender_call("filter", None, raw="{not json")
    assert response.status_code == 400 and "not JSON" in response.json()["Error"]
    response = extender_call("filter", {"Pod": {"metadata": {"name": "x"}}, "NodeNames": []})
    assert response.status_code == 400 and "uid" in response.json()["Error"]
    assert statuses() == before


def test_the_schema_lists_the_extender_and_the_statuses(api):
    schema = api.get("/api/v1/openapi.json").json()
    paths = schema["paths"]
    for verb, args in (("filter", "NodeNames"), ("bind", "PodUID"),
                       ("preempt", "NodeNameToMetaVictims")):
        operation = paths[f"/api/v1/extender/{verb}"]["post"]
        assert "security" not in operation          # kube-scheduler sends no credentials
        body = operation["requestBody"]["content"]["application/json"]["schema"]
        assert args in body["properties"]
        assert "200" in operation["responses"] and "400" in operation["responses"]
    assert "/api/v1/statuses" in paths and "/api/v1/statuses/{namespace}/{name}" in paths
    result = schema["components"]["schemas"]["ExtenderFilterResult"]["properties"]
    assert set(result) == {"Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes",
                           "Error"}
