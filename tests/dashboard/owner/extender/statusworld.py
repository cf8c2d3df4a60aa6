"""A real cache owner with its extender, after kube-scheduler's filter calls left pods in
three schedule states: for the statuses page and REST tests.

    from tests.dashboard.owner.extender.statusworld import scheduled  # noqa: F401  (the fixture)
"""
import pytest
from django.test import override_settings

from simcluster.generate import make_node, make_pod

from dashboard.clients.owner_client import send
from dashboard.wire.clients import redis_client
from tests.dashboard.web.api.apihelpers import OwnerThread, clear_commands
from tests.waiting import wait_for

NAMESPACE = "team"
TAINT = {"key": "dedicated", "value": "infra", "effect": "NoSchedule"}


def filter_call(owner, pod, nodes=("n1", "n2")):
    """kube-scheduler's filter (nodeCacheCapable), as the owner's listener hands it over."""
    return owner.verb("extender_filter", {"Pod": pod, "Nodes": None, "NodeNames": list(nodes)})


def _placed_is_written() -> bool:
    from dashboard.models import PodRecord
    return PodRecord.objects.filter(uid="uid-placed", state="Assumed", node="n1").exists()


@pytest.fixture
def scheduled(redis_url, transactional_db, settings):
    """Nodes n1 (4 cpu, running `low`: 3 cpu at priority 1) and n2 (tainted); then filter
    calls: `placed` (500m) is Binding on n1, `huge` (64 cpu) Waiting, and `vip`
    (2 cpu, priority 100) Preempting `low`; `giant` (99 cpu) is pending, never filtered.
    Yields the OwnerThread (its `verb` calls the extender as the listener does)."""
    # A still picture: `placed` stays Binding however long a (loaded) test runs.
    settings.SCHEDVIEW_BIND_DEADLINE = 24 * 3600
    client = redis_client(settings.REDIS_URL)
    clear_commands(client)
    nodes = [make_node("n1", allocatable={"cpu": "4", "memory": "16Gi", "pods": "110"}),
             make_node("n2", taints=[TAINT])]
    low = make_pod("low", namespace=NAMESPACE, uid="uid-low", node_name="n1",
                   requests={"cpu": "3"}, priority=1)
    pods = {"placed": make_pod("placed", namespace=NAMESPACE, uid="uid-placed",
                               requests={"cpu": "500m"}),
            "huge": make_pod("huge", namespace=NAMESPACE, uid="uid-huge",
                             requests={"cpu": "64"}),
            "vip": make_pod("vip", namespace=NAMESPACE, uid="uid-vip",
                            requests={"cpu": "2"}, priority=100)}
    giant = make_pod("giant", namespace=NAMESPACE, uid="uid-giant", requests={"cpu": "99"})
    # `placed` stays Binding however long a test takes: the bind deadline (60 s) would
    # forget it in a slow sweep on a busy machine.
    with override_settings(SCHEDVIEW_BIND_DEADLINE=3600):
        owner_thread = OwnerThread(client, nodes, [low, *pods.values(), giant])
    with owner_thread as owner:
        wait_for(lambda: send("status", timeout=5)["synced"], 30, "the owner")
        for pod in pods.values():
            filter_call(owner, pod)
        # The owner's writer flushes after the calls: yield the picture once the pages'
        # rows show it, so a test reading them before and after sees one still picture.
        wait_for(_placed_is_written, 30, "the read model's row of the assumed pod")
        yield owner
    clear_commands(client)
