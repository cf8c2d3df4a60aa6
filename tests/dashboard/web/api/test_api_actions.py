"""The actions against a real cache owner: assume (and the queued bind), forget, expire;
the state machine's refusals are 409 and change nothing; bad input never reaches the owner;
no owner is a 503. Every action, refused ones too, leaves an audit row with its user."""
import pytest
from django.conf import settings

from dashboard.models import AuditAction, PodRecord
from dashboard.wire.clients import redis_client
from tests.dashboard.web.api.apihelpers import clear_commands, error_of, pod_record, state_of
from tests.waiting import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]


def assume(api, name, node="node-a"):
    return api.post("/api/v1/pods/assume", {"namespace": "team", "name": name, "node": node},
                    content_type="application/json")


def assumed(api, name) -> str:
    response = assume(api, name)
    assert response.status_code == 200, response.content
    uid = response.json()["uid"]
    wait_for(lambda: state_of(uid) == "Assumed", 10, f"{name} assumed in the read model")
    return uid


def cached_state(owner, uid):
    """What the owner's cache itself says (None: not cached)."""
    return owner.owner.cache.pod_state({"metadata": {"uid": uid}})


def uid_is_pending(owner, uid):
    return cached_state(owner, uid) is None and uid in owner.owner.pending


def audits():
    return list(AuditAction.objects.order_by("at", "id")
                .values_list("actor", "action", "target", "ok"))


def test_assume_places_a_pending_pod_and_queues_its_bind(api, owner):
    response = assume(api, "waiting-0")
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["uid"], body["namespace"], body["name"], body["node"]) == (
        "uid-waiting-0", "team", "waiting-0", "node-a")
    assert (body["before"]["pods"], body["after"]["pods"]) == (1, 2)
    assert body["after"]["requested"]["milli_cpu"] - body["before"]["requested"]["milli_cpu"] \
        == 200
    assert body["task_id"] and redis_client(settings.REDIS_URL).llen("celery") == 1
    assert cached_state(owner, "uid-waiting-0") == "Assumed"
    wait_for(lambda: state_of("uid-waiting-0") == "Assumed", 10, "the read model")
    assert audits() == [("operator", "schedule", "uid-waiting-0", True)]


def test_assume_checks_fit_and_force_overrides_it_on_the_record(api, owner):
    refused = error_of(assume(api, "gpu-job"), 409)
    assert "does not fit on node node-a" in refused and "Insufficient nvidia.com/gpu" in refused
    assert cached_state(owner, "uid-gpu-job") is None
    forced = api.post("/api/v1/pods/assume", {"namespace": "team", "name": "gpu-job",
                                              "node": "node-a", "force": True},
                      content_type="application/json")
    assert forced.status_code == 200, forced.content
    assert "Insufficient nvidia.com/gpu" in forced.json()["forced_past"]
    assert cached_state(owner, "uid-gpu-job") == "Assumed"
    refusal, done = AuditAction.objects.filter(action="schedule").order_by("at", "id")
    assert (refusal.ok, done.ok) == (False, True)
    assert done.details["force"] is True and done.details["forced_past"]


def test_forget_drops_an_assumed_pod(api, owner):
    uid = assumed(api, "waiting-1")
    response = api.post(f"/api/v1/pods/{uid}/forget")
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["changed"], body["node"]) == (True, "node-a")
    assert (body["before"]["pods"], body["after"]["pods"]) == (2, 1)
    assert cached_state(owner, uid) is None
    wait_for(lambda: state_of(uid) == "Forgotten", 10, "the read model")
    assert audits()[-1] == ("operator", "forget", uid, True)


def test_expire_expires_an_assumed_pod_now(api, owner):
    uid = assumed(api, "waiting-2")
    response = api.post(f"/api/v1/pods/{uid}/expire")
    assert response.status_code == 200, response.content
    assert response.json()["changed"] is True
    wait_for(lambda: state_of(uid) == "Expired", 10, "the read model")
    assert audits()[-1] == ("operator", "expire", uid, True)


def test_a_reason_given_is_kept_in_the_audit_with_the_door_and_a_bad_one_is_400(api, owner):
    uid = assumed(api, "waiting-3")
    bad = api.post(f"/api/v1/pods/{uid}/forget", {"reason": "x\u0000y"},
                   content_type="application/json")
    assert bad.status_code == 400 and cached_state(owner, uid) == "Assumed"
    unknown = api.post(f"/api/v1/pods/{uid}/forget", {"why": "drain"},
                       content_type="application/json")
    assert unknown.status_code == 400 and cached_state(owner, uid) == "Assumed"
    done = api.post(f"/api/v1/pods/{uid}/forget", {"reason": "draining node-a by hand"},
                    content_type="application/json")
    assert done.status_code == 200, done.content
    row = AuditAction.objects.filter(action="forget", ok=True).get()
    assert row.details["reason"] == "draining node-a by hand"
    assert row.details["via"] == "api token"
    listed = api.get("/api/v1/audit?action=forget&result=done").json()["items"]
    assert [(item["target"], item["reason"], item["via"]) for item in listed] == [
        (uid, "draining node-a by hand", "api token")]


@pytest.mark.parametrize("action", ["forget", "expire"])
def test_acting_on_a_pod_that_is_not_assumed_is_409_and_changes_nothing(api, owner, action):
    message = error_of(api.post(f"/api/v1/pods/uid-running/{action}"), 409)
    assert "Added" in message and "Assumed" in message
    assert cached_state(owner, "uid-running") == "Added"
    assert audits() == [("operator", action, "uid-running", False)]


def test_forgetting_a_pending_pod_is_409(api, owner):
    assert "only an Assumed pod" in error_of(api.post("/api/v1/pods/uid-waiting-3/forget"), 409)
    assert uid_is_pending(owner, "uid-waiting-3")


def test_assuming_twice_is_409_and_the_first_stands(api, owner):
    uid = assumed(api, "waiting-0")
    assert "already Assumed" in error_of(assume(api, "waiting-0", node="node-b"), 409)
    assert owner.owner.cache.pod_info(uid).node_name == "node-a"
    assert redis_client(settings.REDIS_URL).llen("celery") == 1
    assert [ok for *_, ok in audits()] == [True, False]


@pytest.mark.parametrize("name, node, word", [("nobody", "node-a", "no pending pod"),
                                              ("waiting-1", "node-x", "node-x")])
def test_assuming_an_unknown_pod_or_on_an_unknown_node_is_404(api, owner, name, node, word):
    assert word in error_of(assume(api, name, node=node), 404)
    assert uid_is_pending(owner, "uid-waiting-1")


def test_acting_on_an_unknown_pod_is_404_without_asking_the_owner(api, owner):
    commands = owner.owner.stats["commands"]
    for action in ("forget", "expire"):
        assert "uid-nope" in error_of(api.post(f"/api/v1/pods/uid-nope/{action}"), 404)
    assert owner.owner.stats["commands"] == commands


@pytest.mark.parametrize("body", [
    b'{"namespace": "team", "name": "waiting-0"}',
    b'{"namespace": "team", "name": "waiting-0", "node": ""}',
    b'{"namespace": "team", "name": "waiting-0", "node": "node-a", "extra": 1}',
    b'{"namespace": "team", "name": "waiting-0", "node": 7}',
    b'{"namespace": "team", "name": "wait\\u0000", "node": "node-a"}',
    b'["team", "waiting-0", "node-a"]',
    b'not json',
])
def test_a_bad_assume_body_is_400_and_reaches_no_owner(api, owner, body):
    commands = owner.owner.stats["commands"]
    error_of(api.post("/api/v1/pods/assume", body, content_type="application/json"), 400)
    assert owner.owner.stats["commands"] == commands
    assert uid_is_pending(owner, "uid-waiting-0") and audits() == []


def test_without_an_owner_an_action_is_503_with_a_clear_message(api, redis_url):
    clear_commands(redis_client(settings.REDIS_URL))
    pod_record("orphan", state="Assumed")
    message = error_of(api.post("/api/v1/pods/uid-orphan/forget"), 503)
    assert "manage.py watch" in message
    clear_commands(redis_client(settings.REDIS_URL))
    assert PodRecord.objects.get(uid="uid-orphan").state == "Assumed"
