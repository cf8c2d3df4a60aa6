"""Driving a cache owner in-process, item by item: its clock, the cluster objects fed to
it, its commands without Redis, and waiting for its writer."""
from schedcache import Cache
from simcluster.generate import make_node, make_pod

from dashboard.owner.commands import CommandServer
from dashboard.owner.comparing import CompareRequest
from dashboard.owner.owner import CacheOwner
from tests.decoded_feed import synced_items


class Clock:
    def __init__(self, now=1_000_000.0):
        self.now = now

    def __call__(self):
        return self.now


def new_owner(writer, **options):
    """An owner as the tests drive it: a 30 s TTL, numbers from 100, epoch 7, a still clock."""
    return CacheOwner(Cache(ttl=30), command_server=CommandServer({}), writer=writer,
                      seq_base=100, epoch=7, clock=Clock(), **options)


def command(owner, op, args, actor):
    """A command as the owner serves it (its registered handler), without Redis."""
    return owner.commands.handlers[op](args, actor)


def nodes(*names):
    return [make_node(name, zone=f"zone-{i % 2}") for i, name in enumerate(names)]


def pod(name, node="", **kw):
    return make_pod(name, namespace="team", node_name=node or None, **kw)


def uid(p):
    return p["metadata"]["uid"]


def feed(owner, *items):
    for item in items:
        owner.apply(item)
        if type(item) is CompareRequest:   # compared off the owner's thread: the outcome
            owner.apply(owner.feed.get(timeout=10))   # comes back on the feed


def flushed(owner, writer):
    owner.flush()
    assert writer.wait_idle(timeout=30)


def synced(owner, node_objs, pod_objs):
    feed(owner, *synced_items(node_objs, pod_objs, "10"))
