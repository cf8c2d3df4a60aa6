"""GET /api/v1/pending against a real cache owner (the `owner` fixture: two 32-cpu nodes
without GPUs; pending `waiting-0..3`, which fit, and `gpu-job`, asking for 64 GPUs): the
Pending page's queue for tools, in the same order, filters and pages."""
import re

import pytest

from dashboard.owner.pending_queue import UNSWEPT
from dashboard.owner.pending_reasons import FITS
from tests.dashboard.web.api.apihelpers import error_of
from tests.waiting import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

GPU = "Insufficient nvidia.com/gpu"
QUEUE = ["gpu-job", "waiting-0", "waiting-1", "waiting-2", "waiting-3"]


@pytest.fixture
def swept(api, owner):
    """The owner, once its first sweep gave every pending pod its reason."""
    def reasons_known():
        items = api.get("/api/v1/pending").json()["items"]
        return len(items) == len(QUEUE) and all(item["reason"] != UNSWEPT for item in items)
    wait_for(reasons_known, 30, "the owner's first sweep of reasons")
    return owner


def names(body):
    return [item["name"] for item in body["items"]]


def test_the_queue_in_kube_schedulers_order_with_counts(api, swept):
    body = api.get("/api/v1/pending").json()
    # one priority and one age (the fixture's): then by namespace and name
    assert names(body) == QUEUE
    assert [item["position"] for item in body["items"]] == [1, 2, 3, 4, 5]
    assert (body["queued"], body["count"], body["page"], body["pages"], body["next_page"]) \
        == (5, 5, 1, 1, None)
    gpu = next(item for item in body["items"] if item["name"] == "gpu-job")
    assert gpu["uid"] == "uid-gpu-job" and gpu["namespace"] == "team"
    assert gpu["priority"] == 0 and gpu["reason"] == GPU
    assert gpu["created"] and re.fullmatch(r"(\d+ (s|min|h|d))?", gpu["age"])
    assert body["counts"] == {"reason": [{"value": FITS, "pods": 4}, {"value": GPU, "pods": 1}],
                              "namespace": [{"value": "team", "pods": 5}],
                              "priority": [{"value": 0, "pods": 5}]}


def test_the_same_pods_as_the_page_for_the_same_filters(api, viewer_client, swept):
    """The page's rows (position, name) and the API's items agree, filter for filter."""
    for query in ("", f"reason={FITS}", "namespace=team&per_page=2&page=2"):
        items = api.get(f"/api/v1/pending?{query}").json()["items"]
        html = viewer_client.get(f"/pending/?{query}").content.decode()
        rows = re.findall(r'<tr id="pending-([^"]+)">\s*<td class="num">(\d+)</td>', html)
        assert [(item["uid"], item["position"]) for item in items] \
            == [(uid, int(position)) for uid, position in rows], query


@pytest.mark.parametrize("query, expected, count", [
    ("reason=Insufficient nvidia.com/gpu", ["gpu-job"], 1),
    ("namespace=elsewhere", [], 0),
    ("per_page=2&page=3", None, 5),      # the last page: one pod
])
def test_filters_and_pages(api, swept, query, expected, count):
    body = api.get(f"/api/v1/pending?{query}").json()
    assert body["count"] == count and body["queued"] == 5
    if expected is not None:
        assert names(body) == expected
    else:
        assert len(body["items"]) == 1 and body["items"][0]["position"] == 5
        assert body["pages"] == 3 and body["next_page"] is None


@pytest.mark.parametrize("query, words", [
    ("page=4&per_page=2", "page: 4 is past the last page, 3"),
    ("per_page=0", "per_page"),
    (f"per_page={10 ** 6}", "per_page"),
    ("page=x", "page"),
    ("namespace=" + "n" * 300, "namespace"),
    ("reason=a&reason=b", "reason: given 2 times"),
])
def test_bad_filters_are_a_400_naming_what_was_wrong(api, swept, query, words):
    assert words in error_of(api.get(f"/api/v1/pending?{query}"), 400)


def test_it_needs_a_caller_and_is_in_the_schema(client, api, owner):
    assert client.get("/api/v1/pending").status_code == 401
    operation = api.get("/api/v1/openapi.json").json()["paths"]["/api/v1/pending"]["get"]
    assert operation["operationId"] == "list_pending"
    assert {"200", "400", "401", "502", "503"} == set(operation["responses"])
