"""The ready queue: a pool's claimable pods, oldest idle first, each at most once.

It is kept by `observe` (one call per changed pod, in the order the changes
arrived) and `pop`, both O(1): a pod turning idle goes to the back, a pod that
changed while queued keeps its place with its new resourceVersion, anything no
longer claimable leaves. Nothing ever sorts it on the hot path.
"""
from collections import OrderedDict

from warmpool.podstate import PoolPod


class ReadyQueue:
    def __init__(self):
        self._pods: OrderedDict[str, PoolPod] = OrderedDict()

    def __len__(self) -> int:
        return len(self._pods)

    def __contains__(self, key: str) -> bool:
        return key in self._pods

    def observe(self, key: str, pod: PoolPod | None, reserved: bool = False) -> None:
        """Bring `key` up to date with its current state (None: gone from the pool)."""
        if pod is None or not pod.claimable or reserved:
            self._pods.pop(key, None)
        else:
            self._pods[key] = pod   # a queued pod keeps its place, with its new version

    def pop(self) -> PoolPod | None:
        """Take the pod that has been idle longest."""
        if not self._pods:
            return None
        return self._pods.popitem(last=False)[1]

    def keys(self) -> list:
        return list(self._pods)

    def head(self, limit: int) -> list:
        """The first `limit` pods, in claim order (for status pages)."""
        out = []
        for pod in self._pods.values():
            if len(out) >= limit:
                break
            out.append(pod)
        return out
