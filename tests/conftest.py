"""Fixtures for the whole suite."""
import os
import subprocess

import pytest
from django.test import override_settings

from dashboard import embedded_redis
from dashboard.redis_urls import redis_settings, unix_url


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory):
    """The Redis of this run: REDIS_URL's, else an embedded one started for the run.

    Request it in every test that talks to Redis (Channels, Celery). Django
    read its settings before any fixture ran, so the embedded server's URL is
    put into them (every Redis setting, as settings.py derives them) and into
    the environment, for the processes tests start; both stay for the run.
    """
    url = os.environ.get("REDIS_URL")
    if url:
        yield url
        return
    socket = tmp_path_factory.mktemp("redis") / "redis.sock"
    url = unix_url(socket)
    server = subprocess.Popen(embedded_redis.command(socket))
    try:
        embedded_redis.wait_until_ready(url, server)
        with override_settings(**redis_settings(url)), pytest.MonkeyPatch.context() as patch:
            patch.setenv("REDIS_URL", url)
            yield url
    finally:
        server.terminate()
        server.wait()


@pytest.fixture
def v1(sim):
    """The official client on the test's simulated cluster (each folder defines its `sim`)."""
    from kubernetes import client
    api_client = sim.api_client()
    yield client.CoreV1Api(api_client)
    api_client.close()
