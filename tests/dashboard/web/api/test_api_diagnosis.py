"""GET /api/v1/pods/{uid}/diagnosis against a real cache owner (the `owner` fixture: two
32-cpu nodes without GPUs, pending pods, one of them asking for 64 GPUs)."""
import pytest

from tests.dashboard.web.api.apihelpers import error_of

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

GPU_JOB = ("0/2 nodes are available: 2 Insufficient nvidia.com/gpu. no new claims to "
           "deallocate, preemption: 0/2 nodes are available: 2 Preemption is not helpful for "
           "scheduling.")


def test_a_pending_pod_is_diagnosed_by_the_owner_in_kube_schedulers_words(api, owner):
    response = api.get("/api/v1/pods/uid-gpu-job/diagnosis")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["message"] == GPU_JOB
    assert body["reasons"] == [{"reason": "Insufficient nvidia.com/gpu", "count": 2,
                                "nodes": ["node-a", "node-b"]}]
    node = body["nodes"][0]
    assert node["filter"] == "NodeResourcesFit" and not node["resolvable"]
    assert node["details"] == ["Insufficient nvidia.com/gpu: asks 64, 0 free of 0"]
    assert body["preemption"]["helps"] is False and body["pod"]["name"] == "gpu-job"
    assert body["computed_at_seq"] > 0


def test_a_pod_that_fits_says_where(api, owner):
    body = api.get("/api/v1/pods/uid-waiting-0/diagnosis").json()
    assert body["fits"] and sorted(body["feasible"]) == ["node-a", "node-b"]
    assert body["preemption"] is None and body["message"].startswith("2/2 nodes can take")


def test_a_placed_pod_is_409_and_an_unknown_one_404(api, owner):
    assert "not pending" in error_of(api.get("/api/v1/pods/uid-running/diagnosis"), 409)
    assert "neither cached nor pending" in error_of(
        api.get("/api/v1/pods/uid-nobody/diagnosis"), 404)


def test_it_needs_a_caller_and_is_in_the_schema(client, api, owner):
    assert client.get("/api/v1/pods/uid-gpu-job/diagnosis").status_code == 401
    schema = api.get("/api/v1/openapi.json").json()
    operation = schema["paths"]["/api/v1/pods/{uid}/diagnosis"]["get"]
    assert operation["operationId"] == "diagnose_pod"
    assert {"200", "404", "409", "503"} <= set(operation["responses"])
