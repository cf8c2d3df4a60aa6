"""The pods pages' tests: a real cache owner serving commands over the run's Redis."""
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.conf import settings

from schedcache import Cache
from simcluster.generate import make_node, make_pod

from dashboard.owner.commands import CommandServer
from dashboard.owner.owner import CacheOwner
from dashboard.owner.projection import ProjectionWriter
from dashboard.wire.clients import redis_client
from dashboard.wire.keys import OWNER_COMMANDS
from tests.decoded_feed import synced_items

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "live"))   # livestack.wait_for


@contextmanager
def serving_owner(nodes, pods, prepare=None):
    """A CacheOwner fed `nodes` and `pods` (as the decoder lists them), `prepare(owner)`
    run, its rows written; then serving commands from Redis and applying its feed in a
    thread (as `manage.py watch` does, without the reflectors). Yields the owner."""
    redis_client(settings.REDIS_URL).delete(OWNER_COMMANDS)
    writer = ProjectionWriter().start()
    owner = CacheOwner(Cache(ttl=30), command_server=CommandServer({}), writer=writer,
                       seq_base=0, epoch=1)
    for item in synced_items(nodes, pods):
        owner.apply(item)
    if prepare is not None:
        prepare(owner)
    owner.flush()
    assert writer.wait_idle(timeout=30)
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            owner.commands.serve(timeout=0.05)
            owner.drain_feed()      # what a test puts on the feed, as the watch would
            owner.flush()
    thread = threading.Thread(target=serve, name="test-owner")
    thread.start()
    try:
        yield owner
    finally:
        stop.set()
        thread.join(10)
        writer.close()
        redis_client(settings.REDIS_URL).delete(OWNER_COMMANDS)


@pytest.fixture
def real_owner(redis_url, transactional_db):
    """A CacheOwner with a node n1, an assumed pod "web" (500m, 256Mi) and an added pod
    "db" on it, a pending pod "queued" (250m, 128Mi), serving (see serving_owner).
    Yields (owner, {name: uid})."""
    web = make_pod("web", requests={"cpu": "500m", "memory": "256Mi"})
    db = make_pod("db", node_name="n1", requests={"cpu": "1", "memory": "1Gi"})
    queued = make_pod("queued", requests={"cpu": "250m", "memory": "128Mi"})   # stays pending
    uids = {pod["metadata"]["name"]: pod["metadata"]["uid"] for pod in (web, db, queued)}

    def assume_web(owner):
        owner.commands.handlers["assume"]({"uid": uids["web"], "node": "n1"}, "scheduler")
    with serving_owner([make_node("n1")], [web, db, queued], assume_web) as owner:
        yield owner, uids
