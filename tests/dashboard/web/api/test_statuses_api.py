"""Pod schedule statuses over REST, and kube-scheduler's extender endpoints in the API:
a real owner with its extender on the run's Redis; bad input is a 400 that changes nothing."""
import json

import pytest
from django.test import Client

from simcluster.generate import make_pod

from dashboard.clients.owner_client import send
from dashboard.web.statuses import status_reads
from tests.dashboard.owner.extender.statusworld import NAMESPACE, scheduled  # noqa: F401  (fixture)
from tests.dashboard.web.api.apihelpers import error_of

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


# --- the web is no door to the extender -------------------------------------------------------
@pytest.mark.parametrize("prefix", ["/extender/", "/api/v1/extender/"])
def test_an_anonymous_filter_and_bind_through_the_web_change_nothing(scheduled, prefix):
    """Only the owner's listener serves kube-scheduler (it can require a client certificate);
    the web once forwarded these without credentials, and anyone could bind and preempt."""
    before = statuses()
    pod = make_pod("fresh", namespace=NAMESPACE, uid="uid-fresh", requests={"cpu": "100m"})
    client = Client(enforce_csrf_checks=True)
    for verb, body in (("filter", {"Pod": pod, "Nodes": None, "NodeNames": ["n1", "n2"]}),
                       ("bind", {"PodName": "fresh", "PodNamespace": NAMESPACE,
                                 "PodUID": "uid-fresh", "Node": "n1"}),
                       ("preempt", {"Pod": pod, "NodeNameToMetaVictims": {}})):
        response = client.post(prefix + verb, data=json.dumps(body),
                               content_type="application/json")
        assert response.status_code in (302, 401, 403, 404), (verb, response.status_code)
    assert statuses() == before


def test_the_schema_lists_the_statuses_and_no_extender(api):
    paths = api.get("/api/v1/openapi.json").json()["paths"]
    assert "/api/v1/statuses" in paths and "/api/v1/statuses/{namespace}/{name}" in paths
    assert not [p for p in paths if p.startswith("/api/v1/extender")]
