"""A 20 s Redis outage under churn, every part a real process on a Redis of the test's own:
no owner (nor the pools process) exits, the leader stops serving kube-scheduler before its
lease could pass on, one owner leads afterwards with the cache it kept, and what happened
in the outage is in the history."""
import socket
import sys
import time

import pytest
from django.conf import settings
from django.test import override_settings
from kubernetes import client, config

from dashboard.clients.owner_client import send
from dashboard.clients.pools_transport import read_status
from dashboard.models import ComparerRun, Transition
from dashboard.runtime.redis_urls import redis_settings
from dashboard.wire.clients import redis_client
from dashboard.wire.keys import OWNER_LEASE
from tests.live.livestack import Stack, child_env, owner_status, synced_owner
from tests.live.private_services import PrivateRedis
from tests.waiting import wait_for

pytestmark = pytest.mark.timeout(240)

OUTAGE = 20.0
# The owners' lease: shorter than client-go's defaults, so the test is short.
LEASE, RENEW_DEADLINE, RETRY = 5.0, 4.0, 1.0


@pytest.fixture
def outage_stack(transactional_db, tmp_path):
    redis = PrivateRedis(tmp_path).start()
    kubeconfig = tmp_path / "kubeconfig"
    stack = Stack(tmp_path, child_env(tmp_path, redis.url, kubeconfig, cache_ttl=2,
                                      reap_period=0.5, compare_period=3600,
                                      lease_duration=LEASE, lease_renew_deadline=RENEW_DEADLINE,
                                      lease_retry_period=RETRY))
    try:
        with override_settings(**redis_settings(redis.url)):
            stack.cluster(kubeconfig, "--nodes", "6", "--pods", "60", "--zones", "2",
                          "--bookmark-interval", "1", "--pools", "web=4")
            stack.celery()
            stack.start("pools", [sys.executable, "manage.py", "pools"])
            yield stack, redis
    finally:
        stack.stop_all()
        redis.stop()


def refuses(address: str) -> bool:
    host, port = address.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=1).close()
    except OSError:
        return True
    return False


def alive(stack, names):
    return {name: stack.processes[name].poll() for name in names}


def test_owners_ride_out_a_redis_outage_under_churn(outage_stack):
    stack, redis = outage_stack
    owners = ("owner-a", "owner-b", "pools")
    stack.owner("owner-a")
    synced_owner()
    stack.owner("owner-b")
    wait_for(lambda: "waiting for the leader lease" in stack.log("owner-b"), 30, "the standby")
    wait_for(lambda: (read_status() or {}).get("pools", {}).get("web"), 30, "the pools' status")
    listener = stack.env["SCHEDVIEW_EXTENDER_ADDRESS"]
    stack.extender()
    stack.control("churn", {"rate": 20, "scheduler": True})
    applied = owner_status()["applied"]
    wait_for(lambda: owner_status()["applied"] > applied + 20, 30, "churn reaching the owner")
    seq_before = owner_status()["seq"]

    redis.stop()
    stopped = time.monotonic()
    # The leader cannot renew: it stops serving kube-scheduler at its renew deadline (its
    # renewal thread closes the listener), before its lease could have passed on.
    wait_for(lambda: refuses(listener), LEASE, "the leader to close the extender listener")
    assert time.monotonic() - stopped < LEASE
    outage_end = stopped + OUTAGE
    while time.monotonic() < outage_end:     # the outage itself, watched throughout
        assert alive(stack, owners) == dict.fromkeys(owners), stack.log("owner-a")[-3000:]
        time.sleep(0.2)
    redis.start()

    status = wait_for(synced_owner, 60, "a synced owner after the outage")
    holders = redis_client(settings.REDIS_URL).get(OWNER_LEASE).decode()
    assert holders.startswith("owner-a:"), "the leader took its lease back with its cache"
    assert "leader; owning the cache" not in stack.log("owner-b")
    assert alive(stack, owners) == dict.fromkeys(owners)
    assert status["seq"] > seq_before
    stack.extender()            # kube-scheduler is served again
    redis_client(settings.REDIS_URL).delete("schedview:pools:status")
    wait_for(lambda: read_status(), 10, "the pools process to publish again")

    # What the owner applied while Redis was down reached the history once it came back.
    outage_rows = Transition.objects.filter(seq__gt=seq_before)
    wait_for(lambda: outage_rows.filter(kind="pod_added").exists(), 30,
             "the outage's transitions in the history")
    stack.control("churn", {"rate": 0})
    synced_owner()
    api = client.CoreV1Api(config.new_client_from_config(
        config_file=stack.env["SCHEDVIEW_KUBECONFIG"]))
    bound = {p.metadata.uid for p in api.list_pod_for_all_namespaces().items
             if p.spec.node_name and p.status.phase not in ("Succeeded", "Failed")}
    wait_for(lambda: bound <= set(Transition.objects.filter(kind="pod_added")
                                  .values_list("key", flat=True)),
             30, "every bound pod's arrival in the history")
    seqs = list(Transition.objects.order_by("seq").values_list("seq", flat=True))
    assert len(seqs) == len(set(seqs))

    ComparerRun.objects.all().delete()
    send("compare", {}, timeout=5)
    run = wait_for(lambda: ComparerRun.objects.first(), 60, "a comparison")
    assert run.clean, run.report
