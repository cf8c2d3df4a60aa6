"""Two real owners on a Redis of the test's own, under churn (issue 22, items 1 and 3): a
leader frozen (SIGSTOP) past its lease wakes to find its writes fenced off, so nothing of
it lands after the standby took over (no row, no history, no message to the browsers:
the pages' rows equal the cluster), and it frees the extender's port at once; a Redis emptied under a leader (FLUSHDB) is
no takeover (not even by the standby that finds the lease gone): the leader keeps its
cache and its term, and the history has no hole."""
import asyncio
import os
import re
import signal
import threading
import uuid

import pytest
import redis
from channels_redis.core import RedisChannelLayer
from django.conf import settings
from django.test import override_settings
from kubernetes import client, config

from dashboard.models import PodRecord, Transition
from dashboard.runtime.redis_urls import redis_settings
from dashboard.wire.clients import redis_client
from dashboard.wire.keys import EVENTS_GROUP, OWNER_LEASE, lease_term
from tests.live.livestack import (
    Stack,
    child_env,
    cluster_pods,
    owner_status,
    pod_rows,
    rows_against_cluster,
    synced_owner,
)
from tests.live.private_services import PrivateRedis
from tests.waiting import wait_for

pytestmark = pytest.mark.timeout(120)

# A short lease (client-go's defaults are 15/10/2 s), so that the test is short.
LEASE, RENEW_DEADLINE, RETRY = 3.0, 2.0, 0.5


@pytest.fixture
def fenced_stack(transactional_db, tmp_path):
    redis = PrivateRedis(tmp_path).start()
    kubeconfig = tmp_path / "kubeconfig"
    stack = Stack(tmp_path, child_env(tmp_path, redis.url, kubeconfig, cache_ttl=2,
                                      compare_period=3600, lease_duration=LEASE,
                                      lease_renew_deadline=RENEW_DEADLINE,
                                      lease_retry_period=RETRY))
    try:
        with override_settings(**redis_settings(redis.url)):
            stack.cluster(kubeconfig, "--nodes", "6", "--pods", "60", "--zones", "2",
                          "--bookmark-interval", "1")
            yield stack
    finally:
        stack.stop_all()
        redis.stop()


class Browser:
    """A browser's channel in the events group, recording every message the owners
    publish, from a thread of its own; `close()` ends it with a message of the test's."""

    def __init__(self):
        self.channel = f"fencing-test.{uuid.uuid4().hex}"
        self.messages = []
        self._joined = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._listen()),
                                        daemon=True)

    def _layer(self):
        return RedisChannelLayer(**settings.CHANNEL_LAYERS["default"]["CONFIG"])

    def join(self):
        self._joined.clear()
        asyncio.run(self._group("group_add"))
        if not self._thread.is_alive():
            self._thread.start()
        return self

    async def _group(self, method):
        layer = self._layer()
        try:
            await getattr(layer, method)(EVENTS_GROUP, self.channel)
        finally:
            await layer.close_pools()

    async def _listen(self):
        layer = self._layer()
        try:
            while True:
                try:
                    message = await layer.receive(self.channel)
                except redis.exceptions.TimeoutError:
                    continue        # nothing published for a while (an owner-less spell)
                if message["type"] == "test.end":
                    return
                self.messages.append(message)
        finally:
            await layer.close_pools()

    def close(self):
        async def end():
            layer = self._layer()
            try:
                await layer.send(self.channel, {"type": "test.end"})
            finally:
                await layer.close_pools()
        asyncio.run(end())
        self._thread.join(10)
        asyncio.run(self._group("group_discard"))

    def events(self):
        return [e for m in self.messages for e in m["events"]]


def history_matches(events, stored=None):
    """The published events of the history's kinds that are not the history's row of
    their number; `stored` (seq -> (kind, key)) is the history's, read from the test's
    database unless given."""
    if stored is None:
        stored = {seq: (kind, key) for seq, kind, key in Transition.objects.filter(
            seq__in=[e["seq"] for e in events]).values_list("seq", "kind", "key")}
    return [e for e in events if e["kind"] != "snapshot_updated"
            and stored.get(e["seq"]) != (e["kind"], e["key"])]


def term_of(stack, name):
    return int(re.findall(r"owning the cache \(term (\d+)\)", stack.log(name))[-1])


def one_epoch():
    """The owner epoch of every pod and node row, once they all share one."""
    epochs = set(PodRecord.objects.values_list("owner_epoch", flat=True).distinct())
    return epochs.pop() if len(epochs) == 1 else None


def test_a_leader_frozen_past_its_lease_lands_nothing_when_it_wakes(fenced_stack):
    stack = fenced_stack
    stack.owner("owner-a")
    synced_owner()
    stack.owner("owner-b")
    wait_for(lambda: "waiting for the leader lease" in stack.log("owner-b"), 30, "the standby")
    stack.extender()
    browser = Browser().join()
    stack.control("churn", {"rate": 30, "scheduler": True})
    applied = owner_status()["applied"]
    wait_for(lambda: owner_status()["applied"] > applied + 20, 30, "churn reaching the owner")

    old_epoch = wait_for(one_epoch, 30, "the leader's rows")
    frozen = stack.processes["owner-a"]
    os.kill(frozen.pid, signal.SIGSTOP)
    try:
        wait_for(lambda: "leader; owning the cache" in stack.log("owner-b"), 30,
                 "the standby to take over")
        synced_owner()
        epoch = wait_for(lambda: one_epoch() not in (None, old_epoch) and one_epoch(), 30,
                         "the new leader's rows alone")
        published = len(browser.messages)
        wait_for(lambda: len(browser.messages) > published + 5, 30, "the new leader publishing")
    finally:
        os.kill(frozen.pid, signal.SIGCONT)
    assert term_of(stack, "owner-b") > term_of(stack, "owner-a")

    wait_for(lambda: stack.log("owner-a").count("waiting for the leader lease") == 2, 30,
             "the woken leader to stand by")
    stack.extender(timeout=10)        # its port freed: the new leader listens
    seq = owner_status()["seq"]
    wait_for(lambda: owner_status()["seq"] > seq + 20, 30, "the new leader going on")
    browser.close()

    assert one_epoch() == epoch, "a row of the woken leader landed"
    # The pages' rows equal the cluster once churn stops: nothing the woken leader wrote
    # (a deleted pod shown Added or Pending) is left on them.
    stack.control("churn", {"rate": 0})
    wait_for(lambda: not rows_against_cluster(pod_rows(), cluster_pods(stack)), 30,
             "the pages' rows to equal the cluster")
    events = browser.events()
    seqs = [e["seq"] for e in events]
    assert len(seqs) == len(set(seqs)), "two events went out under one number"
    assert history_matches(events) == []
    assert frozen.poll() is None and "Traceback" not in stack.log("owner-a")


def test_an_emptied_redis_is_no_takeover_and_leaves_no_hole(fenced_stack):
    stack = fenced_stack
    stack.owner("owner-a")
    synced_owner()
    stack.owner("owner-b")
    wait_for(lambda: "waiting for the leader lease" in stack.log("owner-b"), 30, "the standby")
    store = redis_client(settings.REDIS_URL)
    term = term_of(stack, "owner-a")
    stack.control("churn", {"rate": 30, "scheduler": True})
    seq_before = wait_for(lambda: owner_status()["seq"], 30, "the owner's status")

    store.flushdb()
    wait_for(lambda: store.get(lease_term(OWNER_LEASE)) == str(term).encode(), 10,
             "the leader to take its lease back under its term")
    assert store.get(OWNER_LEASE).decode().startswith("owner-a:")
    browser = Browser().join()        # the browsers' group went with the rest
    seq = owner_status()["seq"]
    wait_for(lambda: [e for e in browser.events() if e["seq"] > seq], 30,
             "events published again")
    browser.close()
    wait_for(lambda: Transition.objects.filter(seq__gt=seq).exists(), 30, "history written")

    log = stack.log("owner-a")
    assert log.count("leader; owning the cache") == 1 and log.count("synced:") == 1, log[-3000:]
    assert "another owner led since" not in log
    assert "leader; owning the cache" not in stack.log("owner-b"), "the standby took over"
    assert history_matches(browser.events()) == []
    # Nothing the owner applied around the flush is missing from the history: every pod
    # bound in the cluster arrived in it (numbers skip snapshot events, so no count tells).
    stack.control("churn", {"rate": 0})
    api = client.CoreV1Api(config.new_client_from_config(
        config_file=stack.env["SCHEDVIEW_KUBECONFIG"]))
    bound = {p.metadata.uid for p in api.list_pod_for_all_namespaces().items
             if p.spec.node_name}
    wait_for(lambda: bound <= set(Transition.objects.filter(kind="pod_added")
                                  .values_list("key", flat=True)), 30,
             "every bound pod's arrival in the history")
    assert Transition.objects.filter(seq__gt=seq_before).exists()
