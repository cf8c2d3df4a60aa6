"""The small built-in cluster whose cache the pages show until the live feed arrives.

Why: the pages need a cache holding pods in each state (added, assumed,
assumed with its binding finished) without a cluster to watch. It is built
once per process from simcluster's deterministic generator, the way the
cache owner will build it (nodes, then the listed pods, then a scheduler's
assumptions), and is read-only from then on: views only query it.
"""
import functools
import uuid
from typing import NamedTuple

from django.conf import settings

from schedcache import Cache, Snapshot
from simcluster.generate import generate_cluster

ASSUMED_PODS = 6      # extra pods a scheduler has assumed but the watch has not confirmed
FINISHED_BINDINGS = 4  # of those, the ones whose bind call returned (expiry clock running)


class Example(NamedTuple):
    cache: Cache
    snapshot: Snapshot  # taken before the assumptions, so it lags the cache


@functools.cache
def example() -> Example:
    cluster = generate_cluster(nodes=12, pods=150, zones=3, seed=7)
    cache = Cache(ttl=settings.SCHEDVIEW_CACHE_TTL)
    for node in cluster.nodes:
        cache.add_node(node)
    for pod in cluster.pods:
        if pod["spec"].get("nodeName"):  # a pending pod waits for a scheduler, not the cache
            cache.add_pod(pod)
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)

    templates = [pod for pod in cluster.pods if _owner_kind(pod) == "ReplicaSet"]
    extra = [_replica(pod, index, cache.node_tree.next())
             for index, pod in enumerate(templates[:ASSUMED_PODS])]
    for pod in extra:
        cache.assume_pod(pod)
    for pod in extra[:FINISHED_BINDINGS]:
        cache.finish_binding(pod)
    return Example(cache, snapshot)


def _owner_kind(pod) -> str:
    owners = pod["metadata"].get("ownerReferences") or [{}]
    return owners[0].get("kind", "")


def _replica(pod, index: int, node_name: str) -> dict:
    """Another replica of `pod`'s workload, placed on `node_name` by a scheduler.

    Copies only the two sub-objects it changes: the generator shares the rest.
    """
    metadata = dict(pod["metadata"],
                    name=f"{pod['metadata']['name']}-r{index}",
                    uid=str(uuid.uuid5(uuid.NAMESPACE_URL, f"schedview/example/{index}")))
    return dict(pod, metadata=metadata, spec=dict(pod["spec"], nodeName=node_name))
