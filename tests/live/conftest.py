"""The live feed as separate processes: a simulated cluster, the cache owner(s), a Celery
worker and beat, on the run's real Redis and the test database."""
import os
import sys

import pytest

from dashboard.feed.commands import redis_client
from livestack import Stack, database_url, wait_for


@pytest.fixture
def stack(redis_url, transactional_db, tmp_path):
    client = redis_client()
    for key in client.scan_iter("schedview:*"):
        client.delete(key)
    client.delete("celery")  # tasks left queued by earlier tests
    kubeconfig = tmp_path / "kubeconfig"
    env = dict(os.environ, REDIS_URL=redis_url, DATABASE_URL=database_url(),
               SCHEDVIEW_KUBECONFIG=str(kubeconfig), SCHEDVIEW_CACHE_TTL="2",
               SCHEDVIEW_REAP_PERIOD="0.5", SCHEDVIEW_COMPARE_PERIOD="3600",
               SCHEDVIEW_VAR_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="dashboard.settings")
    s = Stack(tmp_path, env)
    cluster = s.start("cluster", [sys.executable, "-m", "simcluster", "serve", "--nodes", "6",
                                  "--pods", "40", "--zones", "2", "--bookmark-interval", "1",
                                  "--history", "500", "--kubeconfig", str(kubeconfig)])
    wait_for(lambda: kubeconfig.exists() or cluster.poll() is not None, 60, "the cluster")
    s.cluster_url = wait_for(lambda: s.log("cluster").split("\n", 1)[0].strip()
                             if "\n" in s.log("cluster") else "", 10, "the cluster's URL")
    s.start("worker", [sys.executable, "-m", "celery", "-A", "dashboard", "worker",
                       "--loglevel", "WARNING", "--concurrency", "2"])
    s.start("beat", [sys.executable, "-m", "celery", "-A", "dashboard", "beat", "--loglevel",
                     "WARNING", "--schedule", str(tmp_path / "beat")])
    try:
        yield s
    finally:
        for name in list(s.processes):
            s.stop(name)


