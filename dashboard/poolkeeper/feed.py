"""The pools' view of the cluster: pool pods listed and watched by the feed's Reflector,
routed to each pool's members; a pool first seen gets its scheduler then.

The reflector lists and watches only pods with the pool label (a label selector),
with its usual resume, 410 relist and backoff. A pod whose
pool label changes leaves its old pool; a pool with no pods left keeps its scheduler
(requests then wait for pods, or their deadline).
"""
import threading
from typing import Callable

from warmpool import PoolMembers, PoolScheduler, digest
from warmpool.podstate import POOL_LABEL

from dashboard.kube.reflector import Reflector, Relisted, Watched


class PoolFeed:
    """The Reflector's sink: keeps every pool's members, making schedulers on demand."""

    def __init__(self, make_scheduler: Callable[[str, PoolMembers], PoolScheduler]):
        self.make_scheduler = make_scheduler
        self.schedulers: dict[str, PoolScheduler] = {}
        self.synced = threading.Event()
        self._pool_of: dict[str, str] = {}    # pod key -> its pool now
        self._lock = threading.Lock()

    def scheduler(self, pool: str) -> PoolScheduler:
        with self._lock:
            scheduler = self.schedulers.get(pool)
            if scheduler is None:
                scheduler = self.schedulers[pool] = self.make_scheduler(pool, PoolMembers(pool))
            return scheduler

    def __call__(self, item) -> None:
        if isinstance(item, Relisted):
            self._relisted(item.items)
        elif isinstance(item, Watched):
            self._watched(item.type, item.obj)

    def _relisted(self, items: list) -> None:
        by_pool: dict[str, list] = {}
        for obj in items:
            pod = digest(obj)
            if pod is not None:
                by_pool.setdefault(pod.pool, []).append(pod)
        for pool in set(by_pool) | set(self.schedulers):
            self.scheduler(pool).members.replace(by_pool.get(pool, []))
        self._pool_of = {pod.key: pool for pool, pods in by_pool.items() for pod in pods}
        self.synced.set()

    def _watched(self, kind: str, obj: dict) -> None:
        pod = digest(obj)
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        before = self._pool_of.get(key)
        if kind == "DELETED" or pod is None:
            if before is not None:
                self.schedulers[before].members.remove(key)
                del self._pool_of[key]
            return
        if before is not None and before != pod.pool:
            self.schedulers[before].members.remove(key)
        self._pool_of[key] = pod.pool
        self.scheduler(pod.pool).members.apply(pod)


def pool_reflector(core_api, feed: PoolFeed, stop: threading.Event, **options) -> Reflector:
    return Reflector(core_api, "pods", feed, stop=stop, label_selector=POOL_LABEL, **options)
