"""The owner's loop (`runner.step`) through a Redis outage: while the lease is in doubt it
applies the watch and acts on nothing, and the first turn with the lease back writes and
publishes all it held; a Redis that does not answer leaves the loop turning; a lease lost
to another owner ends it."""
import socket
import threading

import pytest
from django.conf import settings
from redis.exceptions import ConnectionError as RedisConnectionError

from schedcache import Cache
from simcluster.generate import make_node, make_pod

from dashboard.owner.commands import CommandServer
from dashboard.owner.owner import CacheOwner
from dashboard.owner.publisher import Publisher
from dashboard.owner.runner import LeadershipLost, step
from dashboard.runtime.redis_outage import loop_client
from dashboard.wire.clients import redis_client
from dashboard.wire.commands import Command
from dashboard.wire.keys import OWNER_COMMANDS
from dashboard.wire.requests import Request
from tests.decoded_feed import synced_items, watched


class Lease:
    """A LeaderLease's answers, set by the test (its renewal thread's findings)."""

    def __init__(self, held=True, lost=False):
        self.is_held = held
        self.lost = threading.Event()
        if lost:
            self.lost.set()

    def held(self):
        return self.is_held and not self.lost.is_set()


class Writer:
    def __init__(self):
        self.batches = []
        self.stale = False          # the projection writer's: a write was refused as stale

    def submit(self, batch, then=None):
        self.batches.append(batch)
        if then is not None:
            then()

    def unwritten(self):
        return 0

    def writing_for(self):
        return 0.0

    def transitions(self):
        return [t["kind"] for b in self.batches for t in b.transitions]


class Layer:
    """A channel layer that fails while `down`, recording what it sent."""

    def __init__(self):
        self.down, self.sent = False, []

    async def group_send(self, group, body):
        if self.down:
            raise RedisConnectionError("Redis is down (test)")
        self.sent.append(body)


def dead_client():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return loop_client(f"redis://127.0.0.1:{port}/0")


def owner_on(client, writer, publisher=None):
    owner = CacheOwner(Cache(ttl=0), command_server=CommandServer({}, client=client),
                       writer=writer, publisher=publisher, redis=client)
    for item in synced_items([make_node("n1")], []):
        owner.feed.put(item)
    return owner


def due():
    return {"flush": 0.0, "snapshot": 0.0}


@pytest.fixture
def rclient(redis_url):
    client = redis_client(settings.REDIS_URL)
    client.delete(OWNER_COMMANDS)
    yield client
    client.delete(OWNER_COMMANDS)


def test_in_doubt_the_owner_applies_the_watch_and_acts_on_nothing(rclient):
    writer = Writer()
    owner = owner_on(rclient, writer)
    lease = Lease(held=False)
    owner.feed.put(watched("pods", "ADDED", make_pod("p1", uid="u1", node_name="n1")))
    rclient.rpush(OWNER_COMMANDS, Request.new(Command("status", {}, "t").body(), timeout=5).to_json())
    deadlines = due()
    while not owner.feed.empty():
        step(owner, deadlines, lease)
    assert owner.cache.pod_count() == 1                 # the watch is applied
    assert rclient.llen(OWNER_COMMANDS) == 1              # no command is served
    assert writer.batches == []                         # nothing is written
    lease.is_held = True                                # renewed again
    step(owner, due(), lease)
    assert rclient.llen(OWNER_COMMANDS) == 0
    assert writer.transitions().count("pod_added") == 1  # what was held, written at once


def test_a_redis_that_does_not_answer_leaves_the_loop_turning_and_writing():
    writer = Writer()
    layer = Layer()
    layer.down = True
    publisher = Publisher(layer)
    owner = owner_on(dead_client(), writer, publisher)
    owner.feed.put(watched("pods", "ADDED", make_pod("p1", uid="u1", node_name="n1")))
    while not owner.feed.empty():
        step(owner, due(), Lease())
    assert owner.redis_backoff.down and publisher.backoff.down
    assert "pod_added" in writer.transitions()          # the database still gets the history
    assert layer.sent == []
    layer.down = False
    publisher.backoff.succeeded()                       # its next try is due
    publisher.publish([{"seq": 99}], {"synced": True})
    [sent] = layer.sent
    assert sent["events"][-1] == {"seq": 99} and len(sent["events"]) > 1  # held ones first
    publisher.close()


def test_a_lease_another_owner_took_ends_the_loop(rclient):
    owner = owner_on(rclient, Writer())
    with pytest.raises(LeadershipLost):
        step(owner, due(), Lease(lost=True))


def test_a_write_refused_as_stale_ends_the_loop(rclient):
    writer = Writer()
    writer.stale = True             # as the projection writer after a refused term
    owner = owner_on(rclient, writer)
    with pytest.raises(LeadershipLost):
        step(owner, due(), Lease())
