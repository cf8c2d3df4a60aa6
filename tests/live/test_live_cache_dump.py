"""The cache dump of a real `manage.py watch` (issue 23) over a simulated cluster: kill
-USR2 makes it log the summary, as kube-scheduler's debugger does, and keeps it running;
`manage.py dumpcache` reads the whole dump from it, a page at a time."""
import io
import signal

import orjson
import pytest
from django.core.management import call_command

from tests.live.livestack import Stack, child_env, clear_redis, synced_owner
from tests.waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(180)]

NODES = 6


def summary_line(s):
    return next((line for line in s.log("owner").splitlines() if "cache dump at seq" in line),
                None)


def test_sigusr2_logs_the_summary_and_dumpcache_reads_the_whole_cache(redis_url,
                                                                      transactional_db,
                                                                      tmp_path):
    clear_redis()
    kubeconfig = tmp_path / "kubeconfig"
    s = Stack(tmp_path, child_env(tmp_path, redis_url, kubeconfig, compare_period=3600))
    s.cluster(kubeconfig, "--nodes", str(NODES), "--pods", "40", "--zones", "2")
    try:
        owner = s.owner("owner")
        synced_owner()
        assert summary_line(s) is None
        owner.send_signal(signal.SIGUSR2)
        line = wait_for(lambda: summary_line(s), 30, "the owner to log the summary")
        assert f": {NODES} nodes, " in line and "comparer: not compared yet" in line
        out = io.StringIO()
        call_command("dumpcache", "--limit", "4", stdout=out)   # two pages of nodes
        lines = [orjson.loads(text) for text in out.getvalue().splitlines()]
        header, nodes = lines[0], [line for line in lines if line["kind"] == "node"]
        pending = [line for line in lines if line["kind"] == "pending"]
        assert header["kind"] == "dump" and header["counts"]["nodes"] == NODES
        assert len(nodes) == NODES and sorted(n["name"] for n in nodes) == \
            [n["name"] for n in nodes]
        # no churn: every page saw the same cache
        assert sum(len(n["pods"]) for n in nodes) == header["counts"]["pods"]
        assert len(pending) == header["counts"]["pending"]
        assert sum(len(n["pods"]) for n in nodes) + len(pending) == 40
        assert owner.poll() is None, "SIGUSR2 must not stop the owner"
    finally:
        s.stop_all()
