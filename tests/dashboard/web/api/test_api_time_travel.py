"""Time travel over REST: after the scripted owner run (tests/dashboard/readmodel/
scripted_run.py), the nodes, a node, the counts, the zones, the pods, a pod and the
snapshot read `at` each step's moment
equal what the read model held live then; a moment before what is kept is a 410, an `at`
that names no moment a 400; the diff of two moments says what changed between them."""
from datetime import timedelta

import pytest

from dashboard.models import Checkpoint, SnapshotSample
from dashboard.readmodel.moment import parse_at
from tests.dashboard.readmodel.scripted_run import scripted_run
from tests.dashboard.web.api.apihelpers import error_of

pytestmark = pytest.mark.django_db(transaction=True)

NODE_KEYS = ("zone", "tree_index", "has_node", "generation", "pods", "images", "requested",
             "non_zero_requested", "allocatable")


@pytest.fixture
def run():
    with scripted_run() as moments:
        yield moments


def by_state(live, node):
    counts = {}
    for pod_node, state, *_ in live["pods"].values():
        if pod_node == node:
            counts[state] = counts.get(state, 0) + 1
    return counts


def test_nodes_a_node_and_counts_at_each_moment_are_as_they_were_live(api, run):
    for seq, live, counts in run:
        listed = api.get(f"/api/v1/nodes?at={seq}&per_page=1000")
        assert listed.status_code == 200, listed.content
        assert {n["name"]: {key: n[key] for key in NODE_KEYS}
                for n in listed.json()["items"]} == {
            name: {key: node[key] for key in NODE_KEYS}
            for name, node in live["nodes"].items()}, f"at seq {seq}"
        for name, node in live["nodes"].items():
            detail = api.get(f"/api/v1/nodes/{name}?at={seq}").json()
            assert (detail["unschedulable"], detail["taints"], detail["pods_by_state"]) == (
                node["unschedulable"], node["taints"], by_state(live, name)), (seq, name)
        found = api.get(f"/api/v1/counts?at={seq}").json()
        assert (found["moment"]["seq"], found["assumed"], found["added"]) == (
            seq, counts["Assumed"], counts["Added"])
        assert found["cpu_requested"] == sum(n["requested"]["milli_cpu"]
                                             for n in live["nodes"].values())


def test_zones_at_a_moment_and_a_node_not_there_then(api, run):
    seq = run[-2][0]
    zones = api.get(f"/api/v1/zones?at={seq}").json()
    assert [z["zone"] for z in zones["zones"]] == ["region-1/zone-a", "region-1/zone-b",
                                                   "region-1/zone-c"]
    assert zones["round_robin"] is None
    first = run[0][0]
    assert "no node 'n4' in the cache at seq" in error_of(
        api.get(f"/api/v1/nodes/n4?at={first}"), 404)


def test_the_pods_and_each_pod_at_each_moment_equal_what_was_live_then(api, run):
    for seq, live, _ in run:
        answer = api.get(f"/api/v1/pods?at={seq}&per_page=500")
        assert answer.status_code == 200, answer.content
        listed = {p["uid"]: (p["node"], p["state"], p["binding_finished"], p["milli_cpu"],
                             p["memory"], p["priority"]) for p in answer.json()["items"]}
        assert listed == live["pods"], seq
        for uid, pod in live["pods"].items():
            detail = api.get(f"/api/v1/pods/{uid}?at={seq}").json()
            assert (detail["node"], detail["state"], detail["binding_finished"],
                    detail["milli_cpu"], detail["memory"], detail["priority"]) == pod
            assert detail["history"] and all(t["seq"] <= seq for t in detail["history"])
            assert detail["seq"] == detail["history"][-1]["seq"]


def test_the_pods_at_a_moment_page_by_cursor_and_filter(api, run):
    seq, live, _ = run[7]
    walked, cursor = [], ""
    while True:
        page = api.get(f"/api/v1/pods?at={seq}&per_page=2&sort=-cpu{cursor}").json()
        walked += [p["uid"] for p in page["items"]]
        if not page["next_cursor"]:
            break
        cursor = f"&cursor={page['next_cursor']}"
    assert sorted(walked) == sorted(live["pods"]) and page["count"] == len(live["pods"])
    assert "not kept for the past" in error_of(api.get(f"/api/v1/pods?at={seq}&sort=changed"),
                                               400)
    on_n3 = api.get(f"/api/v1/pods?at={seq}&node=n3").json()["items"]
    assert sorted(p["uid"] for p in on_n3) == sorted(
        uid for uid, (node, *_) in live["pods"].items() if node == "n3")


def test_a_pod_not_in_the_cache_at_the_moment_is_a_404(api, run):
    first_seq, first, _ = run[0]
    last_seq, last, _ = run[-1]
    left = next(uid for uid in first["pods"] if uid not in last["pods"])
    assert "in the cache at seq" in error_of(api.get(f"/api/v1/pods/{left}?at={last_seq}"), 404)
    assert api.get(f"/api/v1/pods/{left}?at={first_seq}").status_code == 200


def test_the_snapshot_at_a_moment_is_the_latest_taken_up_to_then(api, run):
    # the scripted owner takes no snapshot: one sample a second after each step's moment
    times = [parse_at(str(seq)).at for seq, _, _ in run]
    SnapshotSample.objects.bulk_create(
        SnapshotSample(at=at + timedelta(seconds=1), generation=i, cache_generation=i,
                       changed_nodes=[f"n{i}"]) for i, at in enumerate(times))
    for i, (seq, _, _) in enumerate(run[1:], start=1):
        found = api.get(f"/api/v1/snapshot?at={seq}").json()
        assert found["latest"]["generation"] == i - 1, seq
        assert [s["generation"] for s in found["history"]] == list(range(i))


def test_the_live_counts_without_at(api, run):
    found = api.get("/api/v1/counts").json()
    assert found["moment"] is None and found["pending"] is not None


def test_before_the_oldest_checkpoint_is_a_410_naming_the_oldest(api, run):
    oldest = Checkpoint.objects.order_by("seq").first()
    for url in (f"/api/v1/nodes?at={oldest.seq - 1}", f"/api/v1/nodes/n1?at={oldest.seq - 1}",
                "/api/v1/counts?at=2001-01-01T00:00:00Z", f"/api/v1/zones?at={oldest.seq - 1}",
                f"/api/v1/pods?at={oldest.seq - 1}", f"/api/v1/pods/u?at={oldest.seq - 1}",
                f"/api/v1/snapshot?at={oldest.seq - 1}",
                f"/api/v1/diff?from={oldest.seq - 1}&to={oldest.seq}"):
        assert f"seq {oldest.seq}" in error_of(api.get(url), 410), url


@pytest.mark.parametrize("url,message", [
    ("/api/v1/nodes?at=yesterday", "neither a sequence number nor an ISO 8601 time"),
    ("/api/v1/counts?at=99999999", "after the latest event"),
    ("/api/v1/nodes/n1?at=2999-01-01T00:00:00Z", "in the future"),
    ("/api/v1/nodes?at=1&sort=-cpu", "with at, nodes are listed by name"),
    ("/api/v1/counts?at=", "at:"),
    ("/api/v1/counts?at=1&at=2", "given 2 times"),
    ("/api/v1/diff?from=1", "to:"),
    ("/api/v1/pods?at=yesterday", "neither a sequence number nor an ISO 8601 time"),
    ("/api/v1/pods/u?at=2999-01-01T00:00:00Z", "in the future"),
    ("/api/v1/snapshot?at=99999999", "after the latest event"),
    ("/api/v1/pods?at=", "at:"),
])
def test_an_at_that_names_no_moment_is_a_400(api, run, url, message):
    assert message in error_of(api.get(url), 400)


def test_the_diff_of_two_moments(api, run):
    before, after = run[0][0], run[6][0]   # listed; then w1 bound, w2 forgotten, w3 expired
    answer = api.get(f"/api/v1/diff?from={before}&to={after}")
    assert answer.status_code == 200, answer.content
    found = answer.json()
    assert (found["from"]["seq"], found["to"]["seq"]) == (before, after)
    assert [(p["name"], p["node"], p["state"]) for p in found["appeared"]["items"]] == [
        ("w1", "n1", "Added")]
    assert found["left"]["count"] == found["moved"]["count"] == 0
    n1 = {n["name"]: n for n in found["nodes"]["items"]}["n1"]
    assert (n1["before"]["pods"], n1["after"]["pods"]) == (1, 2)
    assert n1["after"]["milli_cpu"] - n1["before"]["milli_cpu"] == 500
    assert "is after to" in error_of(api.get(f"/api/v1/diff?from={after}&to={before}"), 400)
