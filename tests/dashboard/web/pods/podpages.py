"""Rows for the pods pages' tests, made with the ORM as the owner would write them."""
from datetime import datetime, timedelta, timezone as tz
from itertools import count

from dashboard.models import NodeRecord, PodRecord, Transition

MIB = 1024**2
GIB = 1024**3
T0 = datetime(2026, 1, 1, 12, 0, tzinfo=tz.utc)
_seq = count(1)


def pod(uid, state="Added", *, namespace="default", name=None, node="", zone="",
        binding_finished=False, deadline=None, milli_cpu=0, memory=0, priority=0,
        changed_at=None, assumed_at=None):
    return PodRecord.objects.create(
        uid=uid, namespace=namespace, name=name or uid, state=state, node=node, zone=zone,
        binding_finished=binding_finished, deadline=deadline, milli_cpu=milli_cpu,
        memory=memory, priority=priority, changed_at=changed_at or T0, assumed_at=assumed_at)


def node(name, *, pods=0, cpu=0, memory=0, non_zero_cpu=None, non_zero_memory=None,
         zone="zone-a"):
    return NodeRecord.objects.create(
        name=name, zone=zone, pods=pods,
        requested={"milli_cpu": cpu, "memory": memory},
        non_zero_requested={"milli_cpu": cpu if non_zero_cpu is None else non_zero_cpu,
                            "memory": memory if non_zero_memory is None else non_zero_memory},
        allocatable={"milli_cpu": 4000, "memory": 8 * GIB})


def transition(uid, kind, from_state, to_state, *, cause="watch", actor="", node="n1",
               at=None, namespace="default", name=None):
    seq = next(_seq)
    return Transition.objects.create(
        seq=seq, at=at or T0 + timedelta(seconds=seq), kind=kind, key=uid,
        namespace=namespace, name=name or uid, node=node, from_state=from_state,
        to_state=to_state, cause=cause, actor=actor)


async def connect(path, headers):
    """A logged-in socket, past the push that follows its connect."""
    from channels.testing import WebsocketCommunicator

    from dashboard.asgi import application
    communicator = WebsocketCommunicator(application, path, headers=headers)
    connected, code = await communicator.connect()
    assert connected, code
    await communicator.receive_from(timeout=10)
    return communicator
