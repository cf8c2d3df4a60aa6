"""A pool's members as the watch last showed them, and which of them changed since the
scheduler last looked: the scheduler's informer cache.

The feed thread calls `replace` (a fresh list) and `apply`/`remove` (watch events);
the scheduler's loop calls `take_changes` and reads `get`. A pod that turns idle
calls `on_idle` (the scheduler's notify_idle), outside the lock.
"""
import threading
from typing import Callable

from warmpool.podstate import PoolPod


class PoolMembers:
    def __init__(self, pool: str, on_idle: Callable[[], None] | None = None):
        self.pool = pool
        self.on_idle = on_idle
        self._lock = threading.Lock()
        self._pods: dict[str, PoolPod] = {}
        self._changed: dict[str, None] = {}   # keys in the order they changed, once each

    def __len__(self) -> int:
        return len(self._pods)

    def get(self, key: str) -> PoolPod | None:
        return self._pods.get(key)

    def apply(self, pod: PoolPod) -> None:
        """An added or modified pod of this pool."""
        with self._lock:
            before = self._pods.get(pod.key)
            self._pods[pod.key] = pod
            self._changed[pod.key] = None
        if pod.claimable and (before is None or not before.claimable) and self.on_idle:
            self.on_idle()

    def remove(self, key: str) -> None:
        """A pod deleted, or moved to another pool."""
        with self._lock:
            if self._pods.pop(key, None) is not None:
                self._changed[key] = None

    def replace(self, pods: list) -> None:
        """A relist: these are all the members now. Pods that turned idle while nobody
        watched are queued in the order their idle-since annotations give."""
        fresh = {pod.key: pod for pod in pods}
        with self._lock:
            gone = [key for key in self._pods if key not in fresh]
            old = self._pods
            self._pods = fresh
            for key in gone:
                self._changed[key] = None
            newly_idle = False
            for pod in sorted(pods, key=lambda p: (p.idle_since, p.key)):
                before = old.get(pod.key)
                if before != pod:
                    self._changed[pod.key] = None
                    newly_idle |= pod.claimable and (before is None or not before.claimable)
        if newly_idle and self.on_idle:
            self.on_idle()

    def take_changes(self) -> list:
        """The keys changed since the last call, oldest change first."""
        with self._lock:
            changed, self._changed = self._changed, {}
        return list(changed)

    def claimable(self) -> list:
        """Every claimable member, longest idle first (the slow poll's full resync)."""
        with self._lock:
            pods = [pod for pod in self._pods.values() if pod.claimable]
        return sorted(pods, key=lambda p: (p.idle_since, p.key))
