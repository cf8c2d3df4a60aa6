"""Fixtures of the security tests."""
import pytest
from kubernetes import client, config

from tests.live.livestack import Stack, child_env, clear_redis, synced_owner


@pytest.fixture
def live_cluster(redis_url, transactional_db, tmp_path):
    """A simulated cluster of 3 nodes and a cache owner process (`manage.py watch`, its
    extender listener on a free port) feeding the test database: (stack, CoreV1Api)."""
    clear_redis()
    kubeconfig = tmp_path / "kubeconfig"
    stack = Stack(tmp_path, child_env(tmp_path, redis_url, kubeconfig, compare_period=3600))
    try:
        stack.cluster(kubeconfig, "--nodes", "3", "--pods", "0", "--zones", "1")
        stack.owner("owner")
        synced_owner()
        api_client = config.new_client_from_config(config_file=str(kubeconfig))
        yield stack, client.CoreV1Api(api_client)
        api_client.close()
    finally:
        stack.stop_all()
