"""Handovers between two real owners under churn (issue 22, items 1-3): time without an
owner, time without an extender, and what a stale owner landed.

    .venv/bin/python bench/failover_bench.py [--freeze 40] [--churn 50]

Processes are started as the live tests start them (simulated cluster, two `manage.py
watch`) on REDIS_URL's Redis and DATABASE_URL's database (migrated here), with the lease
settings of the environment (client-go's 15/10/2 s by default). In turn: the leader is
killed (-9) and started again as a standby; the new leader is frozen (SIGSTOP) for
`--freeze` seconds and woken; Redis is emptied (FLUSHDB of REDIS_URL's database) under
the leader. Each prints its times and, for the frozen leader, the rows of it that landed
after the takeover (a fenced owner lands none).
"""
import argparse
import os
import re
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

import django  # noqa: E402

django.setup()

from benchkit import core_api, line  # noqa: E402
from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402

from dashboard.models import PodRecord, Transition  # noqa: E402
from dashboard.wire.clients import redis_client  # noqa: E402
from dashboard.wire.keys import OWNER_LEASE, lease_term  # noqa: E402
from tests.live.livestack import (  # noqa: E402
    Stack,
    child_env,
    clear_redis,
    owner_status,
    synced_owner,
    wait_for,
)


def leader(redis) -> str:
    token = redis.get(OWNER_LEASE)
    return token.decode().rpartition(":")[0] if token else ""


def leads(stack, name, times=1) -> bool:
    return stack.log(name).count("leader; owning the cache") >= times


def serving(stack, name) -> int:
    """How many times `name` opened its extender listener."""
    return stack.log(name).count("serving kube-scheduler's extender")


def since(began: float) -> str:
    return f"{time.monotonic() - began:>8.1f} s"


def epochs() -> set:
    return set(PodRecord.objects.values_list("owner_epoch", flat=True).distinct())


def killed(stack, redis):
    first = leader(redis)
    other = {"owner-a": "owner-b", "owner-b": "owner-a"}[first]
    taken = stack.log(other).count("leader; owning the cache")
    stack.stop(first, sig="kill")
    began = time.monotonic()
    wait_for(lambda: leads(stack, other, taken + 1), 120, "the standby to lead")
    line("kill -9: the standby leads after", since(began))
    synced_owner(timeout=120)
    line("kill -9: the new leader is synced after", since(began))
    stack.extender(timeout=120)
    line("kill -9: the extender answers again after", since(began))
    stack.owner(first)
    wait_for(lambda: "waiting for the leader lease" in stack.log(first), 60, "the standby")


def frozen(stack, redis, freeze):
    first = leader(redis)
    other = {"owner-a": "owner-b", "owner-b": "owner-a"}[first]
    taken = stack.log(other).count("leader; owning the cache")
    listened = serving(stack, other)
    process = stack.processes[first]
    os.kill(process.pid, signal.SIGSTOP)
    began = time.monotonic()
    try:
        wait_for(lambda: leads(stack, other, taken + 1), freeze, "the standby to lead")
        line(f"SIGSTOP {freeze:g} s: the standby leads after", since(began))
        synced_owner(timeout=freeze)
        line(f"SIGSTOP {freeze:g} s: the new leader is synced after", since(began))
        wait_for(lambda: len(epochs()) == 1, freeze, "the new leader's rows alone")
        remaining = freeze - (time.monotonic() - began)
        if remaining > 0:
            time.sleep(remaining)    # the freeze itself, as long as asked
    finally:
        os.kill(process.pid, signal.SIGCONT)
    woke = time.monotonic()
    wait_for(lambda: serving(stack, other) > listened, 60, "the new leader's extender")
    line(f"SIGSTOP {freeze:g} s: the new leader listens after the wake-up", since(woke))
    line(f"SIGSTOP {freeze:g} s: ... after the freeze began", since(began))
    wait_for(lambda: stack.log(first).count("waiting for the leader lease") >= 2, 60,
             "the woken owner to stand by")
    line(f"SIGSTOP {freeze:g} s: the woken owner stands by after", since(woke))
    seq = owner_status()["seq"]
    wait_for(lambda: owner_status()["seq"] > seq + 20, 60, "the new leader going on")
    line("rows of the woken owner that landed (epochs besides the leader's)",
         f"{len(epochs()) - 1:>8d}")
    refused = re.findall(r"\((\d+) pods, (\d+) nodes, (\d+) transitions not written\)",
                         stack.log(first))
    line("its batches refused by the database's term", f"{len(refused):>8d}")


def emptied(stack, redis):
    name = leader(redis)
    term = redis.get(lease_term(OWNER_LEASE))
    seq = owner_status()["seq"]
    redis.flushdb()
    began = time.monotonic()
    wait_for(lambda: redis.get(lease_term(OWNER_LEASE)) == term, 60, "the lease back")
    line("FLUSHDB: the leader holds its lease again, same term, after", since(began))
    wait_for(lambda: owner_status()["seq"] > seq + 50, 60, "the owner going on")
    stack.control("churn", {"rate": 0})
    synced_owner(timeout=60)
    bound = {p.metadata.uid for p in core_api(stack.env["SCHEDVIEW_KUBECONFIG"])
             .list_pod_for_all_namespaces().items if p.spec.node_name}

    def missing() -> int:
        return len(bound - set(Transition.objects.filter(kind="pod_added")
                               .values_list("key", flat=True)))
    try:        # the last flushes are being written: what is missing 30 s on is lost
        wait_for(lambda: not missing(), 30, "every bound pod in the history")
    except AssertionError:
        pass
    line("FLUSHDB: bound pods missing from the history", f"{missing():>8d}")
    line("FLUSHDB: the leader relisted", f"{stack.log(name).count('synced:') - 1:>8d}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=50)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--churn", type=float, default=50)
    parser.add_argument("--freeze", type=float, default=40)
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    clear_redis()
    redis = redis_client(settings.REDIS_URL)
    tmp = Path(tempfile.mkdtemp(prefix="failover-bench-"))
    kubeconfig = tmp / "kubeconfig"
    stack = Stack(tmp, child_env(tmp, os.environ["REDIS_URL"], kubeconfig, compare_period=3600))
    print(f"lease {settings.SCHEDVIEW_LEASE_DURATION:g} s, renew deadline "
          f"{settings.SCHEDVIEW_LEASE_RENEW_DEADLINE:g} s, retry "
          f"{settings.SCHEDVIEW_LEASE_RETRY_PERIOD:g} s; {args.nodes} nodes, {args.pods} pods, "
          f"churn {args.churn:g}/s; logs in {tmp}")
    try:
        stack.cluster(kubeconfig, "--nodes", str(args.nodes), "--pods", str(args.pods),
                      "--zones", "5")
        stack.owner("owner-a")
        synced_owner(timeout=120)
        stack.owner("owner-b")
        wait_for(lambda: "waiting for the leader lease" in stack.log("owner-b"), 60, "standby")
        stack.extender()
        stack.control("churn", {"rate": args.churn, "scheduler": True})
        killed(stack, redis)
        frozen(stack, redis, args.freeze)
        emptied(stack, redis)
    finally:
        stack.stop_all()


if __name__ == "__main__":
    main()
