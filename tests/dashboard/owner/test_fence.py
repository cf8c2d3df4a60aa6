"""Fencing on the run's real PostgreSQL and Redis: a write or publish under a term that is
no longer the lease's lands nowhere (rows, history, the sequence counter, the browsers'
channel), and the writer that met a stale term writes and publishes nothing more."""
import asyncio
import threading
import uuid

import pytest
from django.conf import settings
from django.db import DatabaseError, connection, connections, transaction

from dashboard.models import LeaseTerm, PodRecord, Transition
from dashboard.owner import projection
from dashboard.owner.fence import RedisFence, StaleTerm, hold_term, take_term
from dashboard.owner.fenced_layer import FencedChannelLayer
from dashboard.owner.projection import Batch, ProjectionWriter
from dashboard.owner.publisher import Publisher
from dashboard.runtime.redis_outage import fail_fast_layer
from dashboard.wire.clients import redis_client
from dashboard.wire.keys import EVENTS_GROUP
from tests.dashboard.owner.test_projection import row, transition

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def term_key(redis_url):
    key = f"schedview:test:fence:{uuid.uuid4().hex}:term"
    yield key
    redis_client(settings.REDIS_URL).delete(key)


def batch(term, uid="a", seq=1):
    return Batch(pods={uid: row(uid, "Added", seq)}, transitions=[transition(seq, uid)],
                 term=term)


def test_a_write_under_the_current_term_lands_and_one_under_a_stale_term_does_not():
    mine = take_term()
    projection.write(batch(mine, "a", 1))
    assert take_term() == mine + 1 == LeaseTerm.current()         # another owner took the lease
    with pytest.raises(StaleTerm):
        projection.write(batch(mine, "b", 2))
    assert list(PodRecord.objects.values_list("uid", flat=True)) == ["a"]
    assert list(Transition.objects.values_list("seq", flat=True)) == [1]


def test_a_taking_is_not_held_up_by_a_writer_frozen_mid_write():
    """A writer frozen (SIGSTOP) inside its transaction holds the term's row: the next
    owner's taking ends that session instead of waiting for it, and nothing of it lands."""
    if connection.vendor != "postgresql":
        pytest.skip("sessions are ended on PostgreSQL")
    mine = take_term()
    holding, wake, failed = threading.Event(), threading.Event(), []

    def frozen_writer():
        try:
            with transaction.atomic():
                hold_term(mine)
                Transition.objects.create(**transition(1, "a"))
                holding.set()
                wake.wait(10)
        except DatabaseError as error:
            failed.append(error)
        finally:
            connections.close_all()
    writer = threading.Thread(target=frozen_writer)
    writer.start()
    assert holding.wait(10)
    with connection.cursor() as cursor:
        cursor.execute("SET lock_timeout = '3s'")   # waiting on the frozen writer fails
    try:
        assert take_term() == mine + 1
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")
        wake.set()
        writer.join(10)
    assert failed and not Transition.objects.exists()


def test_the_writer_that_met_a_stale_term_writes_and_publishes_nothing_more():
    mine = take_term()
    take_term()                                                # the next owner's
    writer = ProjectionWriter().start()
    published = []
    try:
        writer.submit(batch(mine, "a", 1), then=lambda: published.append(1))
        writer.submit(batch(None, "b", 2), then=lambda: published.append(2))
        assert writer.wait_idle(10)
    finally:
        writer.close()
    assert writer.stale and writer.failed == 2 and published == []
    assert not PodRecord.objects.exists() and not Transition.objects.exists()


def test_redis_writes_land_only_under_the_current_term(term_key):
    client = redis_client(settings.REDIS_URL)
    lease_key, seq_key = term_key + ":lease", term_key + ":seq"
    fence = RedisFence(client, lease_key, term_key)
    try:
        client.set(lease_key, "owner-a:1")
        assert fence.mirror("owner-a:1", 4)
        assert fence.set(4, {seq_key: (10, 0)}) and client.get(seq_key) == b"10"
        client.set(lease_key, "owner-b:2")                    # the lease passed on
        assert not fence.mirror("owner-a:1", 3)               # the old owner cannot undo it
        assert fence.mirror("owner-b:2", 5)
        assert not fence.set(4, {seq_key: (11, 0)}) and client.get(seq_key) == b"10"
        client.delete(lease_key, term_key)                    # an emptied Redis
        assert not fence.set(5, {seq_key: (12, 0)}) and client.get(seq_key) == b"10"
    finally:
        client.delete(lease_key, seq_key)


def first_message(channel):
    """The first message on the browsers' group that `channel` joined (within 5 s)."""
    async def receive():
        layer = fail_fast_layer()
        try:
            return await asyncio.wait_for(layer.receive(channel), 5)
        finally:
            await layer.close_pools()
    return asyncio.run(receive())


def left(channel):
    async def leave():
        layer = fail_fast_layer()
        try:
            await layer.group_discard(EVENTS_GROUP, channel)
        finally:
            await layer.close_pools()
    asyncio.run(leave())


def joined():
    """A browser's channel (a plain name: any layer instance may receive on it), in the group."""
    async def join():
        layer = fail_fast_layer()
        try:
            channel = f"fence-test.{uuid.uuid4().hex}"
            await layer.group_add(EVENTS_GROUP, channel)
            return channel
        finally:
            await layer.close_pools()
    return asyncio.run(join())


def test_a_publish_under_a_stale_term_is_held_not_sent(term_key):
    """A browser's channel in the group: the stale owner's send is refused in Redis, and its
    events are held; once the term is proven current again they go out with the next."""
    client = redis_client(settings.REDIS_URL)
    fence = RedisFence(client, term_key + ":lease", term_key)
    channel = joined()
    publisher = Publisher(fail_fast_layer(FencedChannelLayer), term_key=term_key)
    try:
        client.set(term_key + ":lease", "owner-b:1")
        assert fence.mirror("owner-b:1", 7)
        publisher.publish([{"seq": 1}], {"seq": 1}, term=6)
        assert publisher.refused == 1 and publisher.sent == 0
        publisher.publish([{"seq": 2}], {"seq": 2}, term=7)
        message = first_message(channel)
    finally:
        publisher.close()
        left(channel)
        client.delete(term_key + ":lease")
    assert [e["seq"] for e in message["events"]] == [1, 2]
    assert message["status"] == {"seq": 2} and publisher.sent == 2
