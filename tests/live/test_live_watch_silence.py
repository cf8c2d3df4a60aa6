"""A silent API server (issue 22, item 4), every part a real process: with the watches'
connections open and nothing flowing (simcluster's `silent_watches` knob), the owner
notices within SCHEDVIEW_WATCH_SILENCE, health's feed check warns "Watch silent for N s",
the watches are restarted, the owner keeps answering, and once the server speaks again the
cache and the pages' rows catch up with the cluster. Prints the time to notice and the
owner's answers during the silence (bench/README.md keeps them)."""
import time

import pytest

from dashboard.clients.owner_client import send
from dashboard.readmodel.health import Thresholds, feed_check
from dashboard.readmodel.read_model import owner_status
from dashboard.wire.commands import CommandError
from tests.live.livestack import (
    Stack,
    child_env,
    clear_redis,
    cluster_pods,
    pod_rows,
    rows_against_cluster,
    synced_owner,
)
from tests.waiting import wait_for

pytestmark = pytest.mark.timeout(180)

SILENCE = 4.0       # SCHEDVIEW_WATCH_SILENCE: the simulated cluster bookmarks every second
NOTICED = SILENCE + 3.0    # health warns within this (the owner's status is 0.1 s old at most)
RESTARTED = "watch said nothing (no event, no bookmark)"


@pytest.fixture
def silent_stack(redis_url, transactional_db, tmp_path):
    clear_redis()
    kubeconfig = tmp_path / "kubeconfig"
    stack = Stack(tmp_path, child_env(tmp_path, redis_url, kubeconfig, cache_ttl=2,
                                      compare_period=3600, watch_silence=SILENCE))
    try:
        stack.cluster(kubeconfig, "--nodes", "6", "--pods", "40", "--zones", "2",
                      "--bookmark-interval", "1")
        yield stack
    finally:
        stack.stop_all()


def feed():
    return feed_check(owner_status(), Thresholds.from_settings())


def answered_status() -> bool:
    try:
        return bool(send("status", timeout=1.0))
    except CommandError:
        return False


def test_a_silent_api_server_is_noticed_and_the_watch_restarted(silent_stack):
    stack = silent_stack
    stack.owner("owner")
    synced_owner()
    stack.control("churn", {"rate": 20, "scheduler": True})
    wait_for(lambda: feed().level == "ok", 10, "a feed that keeps up")

    stack.control("faults", {"silent_watches": True})
    silent_from = time.monotonic()
    asked = []
    try:
        def warned():
            asked.append(answered_status())
            check = feed()
            # Each watch is silent from its own last event: the nodes' (rarer) may reach
            # the bound a moment before the pods'. Both are to be named.
            return check.level == "warn" and "Watch silent for" in check.message and all(
                f"({kind})" in check.message for kind in ("pods", "nodes"))
        wait_for(warned, NOTICED, "health to say both watches are silent")
        noticed = time.monotonic() - silent_from
        wait_for(lambda: stack.log("owner").count(RESTARTED) >= 2, 2 * SILENCE,
                 "the silent watches restarted")
        restarted = time.monotonic() - silent_from
        assert stack.processes["owner"].poll() is None
    finally:
        stack.control("faults", {"silent_watches": False})
    spoke_again = time.monotonic()
    wait_for(lambda: feed().level == "ok", 30, "the feed to keep up again")
    caught_up = time.monotonic() - spoke_again

    stack.control("churn", {"rate": 0})
    synced_owner()
    wait_for(lambda: not rows_against_cluster(pod_rows(), cluster_pods(stack)), 30,
             "the pages' rows to equal the cluster")
    assert all(asked), "the owner stopped answering while its watches were silent"
    print(f"\nsilent API server: health warned {noticed:.1f} s in (bound {SILENCE:g} s), "
          f"watches restarted {restarted:.1f} s in; owner status answered "
          f"{sum(asked)}/{len(asked)} during the silence; feed ok {caught_up:.1f} s after "
          f"the server spoke again")
