"""The live feed as separate processes: a simulated cluster, the cache owner(s), a Celery
worker and beat, on the run's real Redis and the test database."""
import pytest

from tests.live.livestack import Stack, child_env, clear_redis


@pytest.fixture
def stack(redis_url, transactional_db, tmp_path):
    clear_redis()
    kubeconfig = tmp_path / "kubeconfig"
    s = Stack(tmp_path, child_env(tmp_path, redis_url, kubeconfig, cache_ttl=2, reap_period=0.5,
                                  compare_period=3600))
    s.cluster(kubeconfig, "--nodes", "6", "--pods", "40", "--zones", "2",
              "--bookmark-interval", "1")
    s.celery()
    try:
        yield s
    finally:
        s.stop_all()
