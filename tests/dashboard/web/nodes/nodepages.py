"""Rows and owner status for the nodes, zones, snapshot, events and overview tests, made as
the owner writes them, and a websocket client over the real Redis channel layer."""
import re
import time
from contextlib import asynccontextmanager
from datetime import datetime, timedelta, timezone as tz

import orjson
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.conf import settings

from dashboard.asgi import application
from dashboard.models import NodeRecord, PodRecord, SnapshotSample, Transition
from dashboard.wire.clients import redis_client
from dashboard.wire.keys import EVENTS_GROUP, OWNER_STATUS
from dashboard.wire.live import events_message

GIB = 1024**3
MIB = 1024**2
T0 = datetime(2026, 1, 1, 12, 0, tzinfo=tz.utc)
WAIT = 10   # seconds a test waits for a push


def resources(cpu=0, memory=0, pods=0, ephemeral=0, **scalars):
    return {"milli_cpu": cpu, "memory": memory, "ephemeral_storage": ephemeral,
            "allowed_pod_number": pods, "scalar_resources": scalars}


def node(name, zone="region-1/zone-a", tree_index=0, *, requested=None, non_zero=None,
         allocatable=None, pods=0, has_node=True, generation=1, host_ports=(), images=0,
         changed_at=None, **details):
    """`details`: labels, taints, conditions, unschedulable, cpu_percent, ..."""
    return NodeRecord.objects.create(**details,
        name=name, zone=zone, tree_index=tree_index, has_node=has_node, pods=pods,
        generation=generation, requested=requested or resources(),
        non_zero_requested=non_zero or requested or resources(),
        allocatable=allocatable or resources(4000, 8 * GIB, 110),
        host_ports=[list(p) for p in host_ports], images=images,
        changed_at=changed_at or datetime.now(tz.utc))


def pod(uid, state="Added", *, node="", namespace="default", binding_finished=False,
        milli_cpu=0, memory=0):
    return PodRecord.objects.create(uid=uid, namespace=namespace, name=uid, state=state,
                                    node=node, binding_finished=binding_finished,
                                    milli_cpu=milli_cpu, memory=memory)


def transition(seq, kind="pod_added", *, at=None, key=None, namespace="default", name=None,
               node="n1", cause="watch", actor="", from_state="Initial", to_state="Added",
               detail=""):
    return Transition.objects.create(
        seq=seq, at=at or T0 + timedelta(seconds=seq), kind=kind, key=key or f"uid-{seq}",
        namespace=namespace, name=name or f"pod-{seq}", node=node, cause=cause, actor=actor,
        from_state=from_state, to_state=to_state, detail=detail)


def sample(generation, at, changed=(), cache_generation=None):
    return SnapshotSample.objects.create(at=at, generation=generation,
                                         cache_generation=cache_generation or generation,
                                         changed_nodes=list(changed))


def report_owner(**counters):
    """Write a live owner's status, as CacheOwner.flush does."""
    status = {"nodes": 0, "pods": 0, "generation": 0, "seq": 0, "synced": True,
              "feed_backlog": 0, "at": time.time(), **counters}
    redis_client(settings.REDIS_URL).set(OWNER_STATUS, orjson.dumps(status), ex=10)


def squash(html: str) -> str:
    return re.sub(r"\s+", " ", html)


def get(client, url, status=200, **headers):
    response = client.get(url, **headers)
    assert response.status_code == status, response.content[:3000]
    return response, response.content.decode()


def event(seq, kind="pod_added", **fields):
    """An event as the owner publishes it (a Transition row's fields, `at` in epoch seconds)."""
    return {"seq": seq, "at": (T0 + timedelta(seconds=seq)).timestamp(), "kind": kind,
            "key": fields.pop("key", f"uid-{seq}"), "namespace": "default",
            "name": f"pod-{seq}", "node": "n1", "from_state": "Initial", "to_state": "Added",
            "cause": "watch", "actor": "", "detail": "", "generation": seq, **fields}


async def flush(events=(), status=None):
    """One owner flush, sent to the group as the Publisher does."""
    await get_channel_layer().group_send(EVENTS_GROUP, events_message(list(events), status or {}))


@asynccontextmanager
async def socket(path, headers, *, pushes_on_connect=True):
    """A logged-in socket, past the push that follows its connect (the events page has none)."""
    communicator = WebsocketCommunicator(application, path, headers=headers)
    connected, code = await communicator.connect()
    assert connected, code
    if pushes_on_connect:
        await communicator.receive_from(timeout=WAIT)
    try:
        yield communicator
    finally:
        await communicator.disconnect()
        await get_channel_layer().close_pools()


async def refused(path, headers) -> int:
    communicator = WebsocketCommunicator(application, path, headers=headers)
    connected, code = await communicator.connect()
    assert not connected
    await communicator.disconnect(timeout=5)   # let the application finish (its session lookup)
    return code
