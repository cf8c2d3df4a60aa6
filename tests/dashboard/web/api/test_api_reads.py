"""The read endpoints over the read model: pods (filters, sort, pages), one pod with its
history, nodes, one node, zones, snapshot, comparer and events; bad input is a 400."""
import time
from datetime import timedelta

import orjson
import pytest
from django.conf import settings

from dashboard.models import ComparerRun, SnapshotSample, Transition
from dashboard.wire.clients import redis_client
from dashboard.wire.keys import OWNER_STATUS, OWNER_STATUS_TTL
from tests.dashboard.web.api.apihelpers import AT, error_of, node_record, pod_record, transition

pytestmark = pytest.mark.django_db


def names(response):
    assert response.status_code == 200, response.content[:300]
    return [item["name"] for item in response.json()["items"]]


# --- pods -----------------------------------------------------------------------------------
@pytest.fixture
def pods():
    pod_record("web-1", state="Assumed", node="node-a", zone="zone-1", binding_finished=True,
               deadline=time.time() + 20, priority=5)
    pod_record("web-2", state="Added", node="node-b", zone="zone-2", priority=1)
    pod_record("db-1", namespace="data", state="Added", node="node-a", zone="zone-1")
    pod_record("queue-1", state="Pending", node="", zone="",
               changed_at=AT - timedelta(minutes=5))
    pod_record("stuck-1", state="Assumed", node="node-b", zone="zone-2",
               changed_at=AT - timedelta(hours=1))


def test_the_pod_list_pages_every_pod_by_namespace_and_name(api, pods):
    body = api.get("/api/v1/pods").json()
    assert [i["name"] for i in body["items"]] == ["db-1", "queue-1", "stuck-1", "web-1", "web-2"]
    assert (body["count"], body["page"], body["pages"], body["next_page"]) == (5, 1, 1, None)


@pytest.mark.parametrize("query, expected", [
    ("state=Assumed", ["stuck-1", "web-1"]),
    ("namespace=data", ["db-1"]),
    ("node=node-a", ["db-1", "web-1"]),
    ("zone=zone-2", ["stuck-1", "web-2"]),
    ("q=WEB", ["web-1", "web-2"]),
    ("state=Added&node=node-a", ["db-1"]),
    ("state=Expired", []),
    ("state=&namespace=&q=", ["db-1", "queue-1", "stuck-1", "web-1", "web-2"]),
    ("sort=-name", ["web-2", "web-1", "stuck-1", "queue-1", "db-1"]),
    ("sort=-priority", ["web-1", "web-2", "stuck-1", "queue-1", "db-1"]),
])
def test_the_pod_list_filters_and_sorts(api, pods, query, expected):
    assert names(api.get(f"/api/v1/pods?{query}")) == expected


def test_the_pod_list_walks_by_cursor_to_the_last_page_and_back(api, pods):
    first = api.get("/api/v1/pods?per_page=2").json()
    assert (first["count"], first["count_capped"], first["first"]) == (5, False, 1)
    assert first["prev_cursor"] is None
    seen, body = [i["name"] for i in first["items"]], first
    while body["next_cursor"]:
        number = body["page"]
        body = api.get(f"/api/v1/pods?per_page=2&cursor={body['next_cursor']}").json()
        assert body["next_page"] is None          # cursors lead to cursors
        assert body["page"] == number + 1         # the cursor carries the page's number
        seen += [i["name"] for i in body["items"]]
    assert seen == ["db-1", "queue-1", "stuck-1", "web-1", "web-2"]
    # The last page holds what the full pages before it leave, numbered last; the page
    # before it is page 2 as walked forwards (it answered 500 rows "page 5 of 6"
    # overlapping page 5).
    last = api.get(f"/api/v1/pods?per_page=2&cursor={first['last_cursor']}").json()
    assert [i["name"] for i in last["items"]] == ["web-2"]
    assert (last["first"], last["page"], last["pages"], last["next_cursor"]) == (5, 3, 3, None)
    before = api.get(f"/api/v1/pods?per_page=2&cursor={last['prev_cursor']}").json()
    assert [i["name"] for i in before["items"]] == ["stuck-1", "web-1"]
    assert (before["first"], before["page"]) == (3, 2)


def test_a_page_number_past_the_last_is_a_400_naming_the_last(api, pods):
    assert api.get("/api/v1/pods?per_page=2&page=3").status_code == 200
    assert "page: 4 is past the last page, 3" in error_of(
        api.get("/api/v1/pods?per_page=2&page=4"), 400)
    cursor = api.get("/api/v1/pods").json()["last_cursor"]
    assert "not both" in error_of(api.get(f"/api/v1/pods?page=2&cursor={cursor}"), 400)
    assert "made for sort 'name'" in error_of(
        api.get(f"/api/v1/pods?sort=node&cursor={cursor}"), 400)
    assert "not a cursor" in error_of(api.get("/api/v1/pods?cursor=abc"), 400)


def test_the_pod_list_pages_through_without_overlap(api, pods):
    first = api.get("/api/v1/pods?per_page=2").json()
    assert (first["count"], first["pages"], first["next_page"]) == (5, 3, 2)
    seen = [i["name"] for i in first["items"]]
    page = first["next_page"]
    while page:
        body = api.get(f"/api/v1/pods?per_page=2&page={page}").json()
        seen += [i["name"] for i in body["items"]]
        page = body["next_page"]
    assert seen == ["db-1", "queue-1", "stuck-1", "web-1", "web-2"]


def test_assumed_pods_carry_their_expiry_and_stuck_ones_say_so(api, pods):
    items = {i["name"]: i for i in api.get("/api/v1/pods?state=Assumed").json()["items"]}
    bound = items["web-1"]
    assert bound["binding_finished"] is True and 0 < bound["expires_in"] <= 20
    assert bound["stuck"] is False
    assert items["stuck-1"]["stuck"] is True and items["stuck-1"]["expires_in"] is None


@pytest.mark.parametrize("query, word", [
    ("state=Running", "state"),
    ("sort=size", "sort"),
    ("page=0", "page"),
    ("page=x", "page"),
    ("per_page=501", "per_page"),
    ("namespace=a%00b", "namespace"),
    ("q=" + "x" * 300, "q"),
    ("q=%08&q=web", "q"),
])
def test_bad_pod_filters_are_400_naming_the_value(api, pods, query, word):
    assert word in error_of(api.get(f"/api/v1/pods?{query}"), 400)


def test_one_pod_comes_with_its_history_in_sequence_order(api, pods):
    transition(12, key="uid-web-1", kind="pod_assumed", from_state="Initial",
               to_state="Assumed", cause="operator", actor="alice")
    transition(30, key="uid-web-1", kind="pod_binding_finished", from_state="Assumed",
               to_state="Assumed", cause="bind")
    transition(20, key="uid-web-2")
    body = api.get("/api/v1/pods/uid-web-1").json()
    assert (body["name"], body["state"], body["binding_finished"]) == ("web-1", "Assumed", True)
    assert body["deadline"] and body["labels"] == {}
    assert [(t["seq"], t["kind"], t["cause"], t["actor"]) for t in body["history"]] == [
        (12, "pod_assumed", "operator", "alice"), (30, "pod_binding_finished", "bind", "")]
    assert body["history_count"] == 2


def test_a_forgotten_pods_history_keeps_the_api_servers_answer(api, pods):
    why = 'binding refused: 403 pods "web-1" is forbidden: exceeded quota'
    transition(12, key="uid-web-1", kind="pod_forgotten", from_state="Assumed",
               to_state="Initial", cause="extender", actor="kube-scheduler", detail=why)
    [forgotten] = api.get("/api/v1/pods/uid-web-1").json()["history"]
    assert (forgotten["cause"], forgotten["detail"]) == ("extender", why)
    [event] = api.get("/api/v1/events?since=0&key=uid-web-1").json()["events"]
    assert event["detail"] == why


def test_an_unknown_pod_is_404_and_points_at_its_history(api):
    assert "events?key=uid-gone" in error_of(api.get("/api/v1/pods/uid-gone"), 404)


def test_a_pod_uid_that_names_a_post_route_is_read_as_a_uid(api):
    assert "events?key=assume" in error_of(api.get("/api/v1/pods/assume"), 404)


# --- nodes ----------------------------------------------------------------------------------
@pytest.fixture
def nodes():
    node_record("node-b", zone="zone-2", tree_index=1)
    node_record("node-a", zone="zone-1", tree_index=0,
                host_ports=[["0.0.0.0", "TCP", 8080]], images=3)
    node_record("node-c", zone="zone-1", tree_index=2)
    node_record("node-gone", zone="zone-2", tree_index=-1, has_node=False)


def test_the_node_list_pages_nodes_by_name(api, nodes):
    assert names(api.get("/api/v1/nodes")) == ["node-a", "node-b", "node-c", "node-gone"]
    body = api.get("/api/v1/nodes?per_page=3&page=2").json()
    assert [i["name"] for i in body["items"]] == ["node-gone"]
    assert (body["count"], body["page"], body["pages"], body["next_page"]) == (4, 2, 2, None)
    assert names(api.get("/api/v1/nodes?zone=zone-2")) == ["node-b", "node-gone"]


def test_a_node_has_its_aggregates_ports_and_pods_by_state(api, nodes, pods):
    body = api.get("/api/v1/nodes/node-a").json()
    assert body["allocatable"]["milli_cpu"] == 8000 and body["requested"]["memory"] == 2**30
    assert body["host_ports"] == [{"ip": "0.0.0.0", "protocol": "TCP", "port": 8080}]
    assert (body["images"], body["has_node"], body["tree_index"]) == (3, True, 0)
    assert body["pods_by_state"] == {"Assumed": 1, "Added": 1}
    assert api.get("/api/v1/nodes/node-gone").json()["has_node"] is False


def test_an_unknown_node_is_404_and_bad_pages_400(api, nodes):
    assert "node-x" in error_of(api.get("/api/v1/nodes/node-x"), 404)
    assert "per_page" in error_of(api.get("/api/v1/nodes?per_page=0"), 400)


# --- zones, snapshot, comparer --------------------------------------------------------------
@pytest.fixture
def owner_status(redis_url):
    """Write the owner's status as a live owner does; none before, gone afterwards."""
    client = redis_client(settings.REDIS_URL)
    client.delete(OWNER_STATUS)
    yield lambda status: client.set(OWNER_STATUS, orjson.dumps(status), ex=OWNER_STATUS_TTL)
    client.delete(OWNER_STATUS)


def test_zones_follow_the_node_tree_order(api, nodes, owner_status):
    assert api.get("/api/v1/zones").json() == {
        "zones": [{"zone": "zone-1", "nodes": ["node-a", "node-c"]},
                  {"zone": "zone-2", "nodes": ["node-b"]}],
        "not_in_tree": ["node-gone"], "round_robin": None}
    # zone-1 is next, but its round is over: the round robin moves on to zone-2's node.
    owner_status({"round_robin": {"zone_index": 0, "zones": [["zone-1", 2], ["zone-2", 0]]}})
    assert api.get("/api/v1/zones").json()["round_robin"] == {"zone": "zone-2",
                                                              "node": "node-b"}


def test_the_snapshot_is_the_latest_sample_with_its_history(api):
    assert api.get("/api/v1/snapshot").json() == {"latest": None, "history": []}
    for i in range(5):
        SnapshotSample.objects.create(at=AT + timedelta(seconds=i), generation=10 * i,
                                      cache_generation=10 * i + 1, changed_nodes=[f"n{i}"])
    body = api.get("/api/v1/snapshot?history=3").json()
    assert (body["latest"]["generation"], body["latest"]["changed_nodes"]) == (40, ["n4"])
    assert [s["generation"] for s in body["history"]] == [20, 30, 40]
    assert "history" in error_of(api.get("/api/v1/snapshot?history=-1"), 400)


def test_the_comparer_gives_its_latest_report(api):
    assert "no comparison" in error_of(api.get("/api/v1/comparer"), 404)
    ComparerRun.objects.create(at=AT, clean=False, report={"missed_pods": ["a"]})
    ComparerRun.objects.create(at=AT + timedelta(minutes=1), clean=True, report={})
    body = api.get("/api/v1/comparer").json()
    assert (body["clean"], body["report"], body["error"]) == (True, {}, "")
    # A failed attempt is the latest; the last clean one is still named.
    ComparerRun.objects.create(at=AT + timedelta(minutes=2), clean=False, report={},
                               error="could not list the cluster: ConnectionRefusedError")
    body = api.get("/api/v1/comparer").json()
    assert (body["clean"], body["error"]) == (False, "could not list the cluster: "
                                                     "ConnectionRefusedError")
    assert body["last_clean_at"].startswith((AT + timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M"))


# --- events ---------------------------------------------------------------------------------
def test_events_follow_from_a_sequence_number_without_gaps(api):
    for seq in (3, 5, 6, 9, 10):
        transition(seq, key=f"uid-{seq % 2}", kind="pod_added" if seq > 5 else "pod_updated")
    first = api.get("/api/v1/events?since=3&limit=2").json()
    assert [e["seq"] for e in first["events"]] == [5, 6]
    assert (first["next_since"], first["more"]) == (6, True)
    rest = api.get(f"/api/v1/events?since={first['next_since']}&limit=2").json()
    assert [e["seq"] for e in rest["events"]] == [9, 10] and rest["more"] is False
    transition(11)
    after = api.get(f"/api/v1/events?since={rest['next_since']}").json()
    assert [e["seq"] for e in after["events"]] == [11] and after["next_since"] == 11
    empty = api.get("/api/v1/events?since=11").json()
    assert (empty["events"], empty["next_since"], empty["more"]) == ([], 11, False)


def test_events_say_how_far_the_history_was_pruned(api):
    from dashboard.worker import history_retention
    for seq in range(1, 9):
        transition(seq)
    assert api.get("/api/v1/events?since=0").json()["pruned_below"] == 0
    history_retention.prune(keep=3)
    body = api.get("/api/v1/events?since=2").json()
    assert [e["seq"] for e in body["events"]] == [6, 7, 8] and body["pruned_below"] == 6


def test_events_filter_by_key_and_kind(api):
    for seq in (1, 2, 3, 4):
        transition(seq, key=f"uid-{seq % 2}", kind="pod_added" if seq > 2 else "pod_updated")
    assert [e["seq"] for e in api.get("/api/v1/events?key=uid-1").json()["events"]] == [1, 3]
    assert [e["seq"] for e in
            api.get("/api/v1/events?kind=pod_added&key=uid-0").json()["events"]] == [4]


@pytest.mark.parametrize("query", ["since=-1", "since=9223372036854775808", "limit=0",
                                   "limit=1001", "since=abc", "key="])
def test_bad_event_queries_are_400(api, query):
    transition(1)
    response = api.get(f"/api/v1/events?{query}")
    if query == "key=":
        # An empty filter is no filter.
        assert [e["seq"] for e in response.json()["events"]] == [1]
    else:
        error_of(response, 400)
    assert Transition.objects.count() == 1


def test_a_node_has_its_labels_taints_and_conditions_and_a_pod_its_gpus(api):
    node_record("gpu-1", labels={"pool": "gpu"}, unschedulable=True,
                taints=[{"key": "nvidia.com/gpu", "value": "", "effect": "NoSchedule"}],
                conditions=[{"type": "Ready", "status": "True"}])
    pod_record("job", state="Pending", node="", milli_cpu=1000, memory=4 << 30,
               scalar_resources={"nvidia.com/gpu": 64})
    body = api.get("/api/v1/nodes/gpu-1").json()
    assert (body["labels"], body["taints"], body["conditions"], body["unschedulable"]) == (
        {"pool": "gpu"}, [{"key": "nvidia.com/gpu", "value": "", "effect": "NoSchedule"}],
        [{"type": "Ready", "status": "True"}], True)
    job = api.get("/api/v1/pods?state=Pending").json()["items"][0]
    assert (job["milli_cpu"], job["memory"], job["scalar_resources"]) == (
        1000, 4 << 30, {"nvidia.com/gpu": 64})


def test_the_node_list_filters_and_sorts_as_the_nodes_page(api):
    node_record("n1", labels={"pool": "web"}, cpu_percent=90.0)
    node_record("n2", labels={"pool": "gpu"}, cpu_percent=20.0, gpu_percent=50.0,
                taints=[{"key": "gpu", "value": "", "effect": "NoSchedule"}])
    node_record("n3", cpu_percent=55.0)
    assert names(api.get("/api/v1/nodes?sort=-cpu")) == ["n1", "n3", "n2"]
    assert names(api.get("/api/v1/nodes?label=pool")) == ["n1", "n2"]
    assert names(api.get("/api/v1/nodes?label=pool%3Dgpu")) == ["n2"]
    assert names(api.get("/api/v1/nodes?taint=noschedule")) == ["n2"]
    assert names(api.get("/api/v1/nodes?use=cpu&above=50")) == ["n1", "n3"]
    assert names(api.get("/api/v1/nodes?use=gpu&above=1")) == ["n2"]
    assert "label: a key" in error_of(api.get("/api/v1/nodes?label=%3Dx"), 400)
    assert "use" in error_of(api.get("/api/v1/nodes?use=disk"), 400)
