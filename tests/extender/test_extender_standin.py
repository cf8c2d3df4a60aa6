"""kube-scheduler's stand-in (the embedded default's scheduler) deciding against real pieces:
a served simulated cluster, the real extender (cache, DefaultAlgorithm, statuses) behind
the owner's listener over HTTP, or behind the owner's commands over Redis."""
import logging
from datetime import timedelta

import pytest

from dashboard.extender import standin
from dashboard.extender.handlers import command_handlers
from dashboard.extender.listener import ExtenderListener
from dashboard.extender.owner_calls import OwnerCalls
from dashboard.feed.commands import CommandServer, redis_client
from simcluster import SimCluster
from simcluster.generate import BASE_TIME, Cluster, make_node, make_pod
from tests.api.apihelpers import clear_commands
from tests.live.livestack import free_port

NS = "team"
TAINT = {"key": "dedicated", "value": "infra", "effect": "NoSchedule"}


def later(seconds):
    return BASE_TIME + timedelta(seconds=seconds)


NODES = [make_node("n1", allocatable={"cpu": "4", "memory": "16Gi", "pods": "110"}),
         make_node("n2", taints=[TAINT])]
LOW = make_pod("low", namespace=NS, uid="uid-low", node_name="n1", requests={"cpu": "3"},
               priority=1)
# Oldest first: `placed` fits n1 beside `low`; `vip` then fits only without `low`;
# `huge` fits nowhere, and outranks nobody.
PENDING = [make_pod("placed", namespace=NS, uid="uid-placed", requests={"cpu": "500m"},
                    created=later(1)),
           make_pod("vip", namespace=NS, uid="uid-vip", requests={"cpu": "2"}, priority=100,
                    created=later(2)),
           make_pod("huge", namespace=NS, uid="uid-huge", requests={"cpu": "64"},
                    created=later(3))]


@pytest.fixture
def sim():
    with SimCluster(cluster=Cluster(nodes=list(NODES), pods=[LOW, *PENDING]), kubelet=False,
                    namespaces=1) as s:
        yield s


@pytest.fixture
def cached(world):
    """The extender's cache holds what the owner's watch would: the nodes and `low`."""
    for node in NODES:
        world.cache.add_node(node)
    world.cache.add_pod(LOW)
    return world


@pytest.fixture
def over_http(cached, served):
    """The owner's listener over HTTP, its calls served by a thread standing in for the
    owner's."""
    calls = OwnerCalls(command_handlers(cached.extender), "kube-scheduler")
    served(lambda: calls.serve() or calls.wait(0.05))
    listener = ExtenderListener("127.0.0.1:0", calls, 5.0).start()
    host, port = listener.server_address[:2]
    door = standin.HttpDoor(f"{host}:{port}", 10.0)
    yield door
    door.close()
    listener.close()


@pytest.fixture
def over_commands(cached, served, redis_url):
    """The owner's commands over the run's Redis, as the web's /extender views send them."""
    client = redis_client()
    clear_commands(client)
    server = CommandServer(command_handlers(cached.extender), client=client)
    served(lambda: server.serve(timeout=0.05))
    yield standin.CommandDoor()
    clear_commands(client)


@pytest.mark.parametrize("door", ["over_http", "over_commands"])
def test_filter_binds_preempts_and_waits_as_kube_scheduler_would(door, request, cached, v1):
    door = request.getfixturevalue(door)
    counts = standin.schedule(v1, door, limit=10)
    assert counts == {"bind": 1, "wait": 1, "preempt": 1, "refused": 0, "victims": 1}
    assert cached.binds.calls == [("uid-placed", NS, "placed", "n1")]
    states = {u: cached.statuses.state(u) for u in ("uid-placed", "uid-vip", "uid-huge")}
    assert states == {"uid-placed": "Binding", "uid-vip": "Preempting", "uid-huge": "Waiting"}
    assert v1.read_namespaced_pod("low", NS).metadata.deletion_timestamp is not None

    # Nothing bound or removed yet: the bind is repeated (a no-op), the terminating victim
    # is not deleted again, the huge pod still waits.
    counts = standin.schedule(v1, door, limit=10)
    assert counts == {"bind": 1, "wait": 1, "preempt": 1, "refused": 0, "victims": 0}
    assert len(cached.binds.calls) == 1

    cached.cache.remove_pod(LOW)          # the watch saw the victim go
    counts = standin.schedule(v1, door, limit=10)
    assert counts["bind"] == 2 and counts["preempt"] == 0
    assert cached.binds.calls[1] == ("uid-vip", NS, "vip", "n1")
    assert cached.statuses.state("uid-vip") == "Binding"


def test_limit_takes_the_oldest_pods(over_http, cached, v1):
    assert standin.schedule(v1, over_http, limit=1)["bind"] == 1
    assert set(cached.statuses.dump()) == {"uid-placed"}


def test_a_low_priority_pod_that_fits_nowhere_just_waits(over_http, cached, v1):
    v1.delete_namespaced_pod("vip", NS)
    counts = standin.schedule(v1, over_http, limit=10)
    assert counts == {"bind": 1, "wait": 1, "preempt": 0, "refused": 0, "victims": 0}
    assert v1.read_namespaced_pod("low", NS).metadata.deletion_timestamp is None
    status = cached.statuses.get("uid-huge").as_dict()
    assert status["state"] == "Waiting" and set(status["wait_reasons"]) == {"n1", "n2"}


def test_a_pod_the_extender_names_no_victims_for_waits(over_http, cached, v1):
    # It outranks `low`, so kube-scheduler offers it as a victim; but even without `low`
    # the pod fits nowhere, so the extender has it wait and answers no victims.
    v1.delete_namespaced_pod("vip", NS)
    big = v1.create_namespaced_pod(NS, make_pod("big", namespace=NS, requests={"cpu": "64"},
                                                priority=50)).metadata.uid
    counts = standin.schedule(v1, over_http, limit=10)
    assert counts == {"bind": 1, "wait": 2, "preempt": 0, "refused": 0, "victims": 0}
    assert cached.extender.stats["preempt"] == 1      # offered `low`, answered no victims
    assert cached.statuses.state(big) == "Waiting"
    assert v1.read_namespaced_pod("low", NS).metadata.deletion_timestamp is None


def test_a_listener_down_ends_the_period_with_a_log_line(v1, caplog):
    door = standin.HttpDoor(f"127.0.0.1:{free_port()}", 2.0)
    with caplog.at_level(logging.WARNING, logger="dashboard.extender.standin"):
        assert standin.schedule(v1, door, limit=10) == dict.fromkeys(standin.OUTCOMES, 0)
    assert "trying again next period" in caplog.text


def test_a_cluster_down_ends_the_period_with_a_log_line(over_http, sim, v1, caplog):
    sim.kill()
    with caplog.at_level(logging.WARNING, logger="dashboard.extender.standin"):
        assert standin.schedule(v1, over_http, limit=10) == dict.fromkeys(standin.OUTCOMES, 0)
    assert "the cluster" in caplog.text
