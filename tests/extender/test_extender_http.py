"""The extender's HTTP endpoints, as kube-scheduler calls them, through the real command
channel on the run's Redis to the real extender handlers (standing in for the owner)."""

import orjson
import pytest
from django.test import override_settings

from dashboard.extender.handlers import command_handlers
from dashboard.feed.commands import COMMANDS_KEY, CommandServer, redis_client
from extender_builders import bind_args, filter_args


@pytest.fixture
def owner(redis_url, world, served):
    """The extender's command handlers served from a thread, like the owner serves them."""
    redis_client().delete(COMMANDS_KEY)
    server = CommandServer(command_handlers(world.extender))
    served(lambda: server.serve(timeout=0.05))
    return world


def post(client, verb, body):
    response = client.post(f"/extender/{verb}", data=orjson.dumps(body),
                           content_type="application/json")
    return response.status_code, response.json()


def test_filter_then_bind_over_http(client, owner):
    nodes = [owner.node("n1"), owner.node("n2")]
    pod = owner.pod("web", requests={"cpu": "1"})
    status, result = post(client, "filter", filter_args(pod, nodes))
    assert status == 200 and result["Error"] == ""
    [node] = result["NodeNames"]
    assert owner.cache.is_assumed_pod(pod)
    status, result = post(client, "bind", bind_args(pod, node))
    assert (status, result) == (200, {"Error": ""})
    assert owner.binds.calls == [(pod["metadata"]["uid"], "default", "web", node)]


def test_wait_reasons_reach_kube_scheduler_per_node(client, owner):
    nodes = [owner.node("n1")]
    huge = owner.pod("huge", requests={"cpu": "64"})
    status, result = post(client, "filter", filter_args(huge, nodes, cache_capable=False))
    assert status == 200
    assert result["Nodes"]["items"] == [] or not result["Nodes"]["items"]
    assert "Insufficient cpu" in result["FailedNodes"]["n1"]


@pytest.mark.parametrize("body,message", [
    (b"{not json", "not JSON"),
    (b"[1, 2]", "JSON object"),
])
def test_malformed_bodies_are_400_and_change_nothing(client, owner, body, message):
    owner.node("n1")
    before = owner.state()
    response = client.post("/extender/filter", data=body, content_type="application/json")
    assert response.status_code == 400 and message in response.json()["Error"]
    assert owner.state() == before


def test_an_unknown_pod_is_a_user_error(client, owner):
    status, result = post(client, "bind", {"PodName": "x", "PodNamespace": "default",
                                           "PodUID": "no-such-uid", "Node": "n1"})
    assert status == 400 and result["Error"]


@override_settings(SCHEDVIEW_EXTENDER_TIMEOUT=0.3)
def test_without_an_owner_filter_reports_the_error_in_its_body(client, redis_url, world):
    redis_client().delete(COMMANDS_KEY)
    pod = world.pod("lonely")
    status, result = post(client, "filter", filter_args(pod, [world.node("n1")]))
    assert status == 200 and "did not answer" in result["Error"]
    status, result = post(client, "preempt", {"Pod": pod, "NodeNameToMetaVictims": {}})
    assert status == 500
    redis_client().delete(COMMANDS_KEY)


def test_only_post(client):
    assert client.get("/extender/filter").status_code == 405
