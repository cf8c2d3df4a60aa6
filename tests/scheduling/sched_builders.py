"""Builders shared by the scheduling tests."""

from schedcache import Cache
from scheduling.noderecords import NodeRecord
from scheduling.podview import PodView
from simcluster.generate import make_pod

_counter = iter(range(10 ** 9))


def pod(name=None, **kwargs):
    name = name or f"p{next(_counter)}"
    kwargs.setdefault("uid", f"uid-{name}-{next(_counter)}")
    return make_pod(name, **kwargs)


def node_record(node, pods=()):
    """A NodeRecord over a one-node cache holding `pods` (bound to it)."""
    cache = Cache(ttl=0)
    cache.add_node(node)
    for p in pods:
        cache.add_pod(p)
    return NodeRecord(cache.node_info(node["metadata"]["name"]), 0)


def view(p):
    return PodView(p)
