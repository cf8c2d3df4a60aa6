"""Warm pools in the simulated cluster: pre-started pods a pool scheduler claims, and the
controller that hands them back idle after use.

Pool pods follow warmpool's conventions (warmpool/podstate.py): the labels
`schedview.io/pool=<pool>` and `schedview.io/phase=Idle|Running|Paused|Stopping`,
the annotation `schedview.io/idle-since`. `create(pool, count)` adds bound pods in
namespace `warm-pools`, idle. With `hold` > 0, a thread (or `step(now)`) moves a
pod that has been claimed (Running or Paused) for `hold` seconds to Stopping, and a
Stopping one back to Idle after `stop_delay` seconds, with a new idle-since and
without its claim, and recreates pool pods that churn deleted: the traffic that
keeps a pool panel moving.
"""
import threading

import orjson

from simcluster.patch import MERGE
from simcluster.resources import TOPOLOGY_LABELS, Api
from simcluster.status import ApiError
from warmpool.podstate import (CLAIM_PHASES, IDLE, IDLE_SINCE_ANNOTATION,
                               PHASE_LABEL, POOL_LABEL, STOPPING)

_KEPT_LABELS = (POOL_LABEL, PHASE_LABEL, *TOPOLOGY_LABELS)
NAMESPACE = "warm-pools"
MANAGER = "simcluster-pools"


class WarmPools:
    def __init__(self, api: Api, *, hold: float = 0.0, stop_delay: float = 1.0):
        self.api = api
        self.hold = float(hold)
        self.stop_delay = float(stop_delay)
        self.recycled = 0
        self._keys: dict[str, str] = {}          # pod key -> pool
        self._seen: dict[str, tuple] = {}        # pod key -> (phase, since)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = None

    def knobs(self) -> dict:
        with self._lock:
            pools: dict = {}
            for pool in self._keys.values():
                pools[pool] = pools.get(pool, 0) + 1
        return {"pools": pools, "hold": self.hold, "stop_delay": self.stop_delay,
                "recycled": self.recycled}

    def update(self, create: dict | None = None, hold: float | None = None,
               stop_delay: float | None = None) -> dict:
        """Control: add pods to pools ({"pool": count}) and set the recycling delays."""
        for pool, count in (create or {}).items():
            self.create(str(pool), int(count))
        if hold is not None:
            self.hold = float(hold)
        if stop_delay is not None:
            self.stop_delay = float(stop_delay)
        return self.knobs()

    def create(self, pool: str, count: int) -> list:
        """`count` more idle pods in `pool`, bound round robin to the nodes; their keys."""
        if count < 0:
            raise ValueError("a pool size cannot be negative")
        self.api.ensure_namespace(NAMESPACE)
        with self._lock:
            taken = sum(1 for p in self._keys.values() if p == pool)
        keys = []
        for i in range(taken, taken + count):
            key = self._add(pool, f"{pool}-{i:04d}", i)
            with self._lock:
                self._keys[key] = pool
            keys.append(key)
        return keys

    def _add(self, pool: str, name: str, i: int) -> str:
        """One idle pool pod, bound to the i-th node (as its kubelet had started it)."""
        api = self.api
        with api.store.lock:
            nodes = api.store.resources["nodes"].keys
            node = nodes[i % len(nodes)] if nodes else None
        body = {"metadata": {"name": name, "labels": {POOL_LABEL: pool, PHASE_LABEL: IDLE},
                             "annotations": {IDLE_SINCE_ANNOTATION: f"{api.clock():.3f}"}},
                "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10",
                                         "resources": {"requests": {"cpu": "10m",
                                                                    "memory": "16Mi"}}}]}}
        api.create_pod(NAMESPACE, body, MANAGER)
        if node is not None:
            api.bind(NAMESPACE, name, {"target": {"kind": "Node", "name": node}})
        return f"{NAMESPACE}/{name}"

    # -- recycling --------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="simcluster-pools", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            if self.hold > 0:
                self.step()

    def step(self, now: float | None = None) -> int:
        """Move claimed pods held long enough to Stopping, and stopped ones to Idle, and
        replace pool pods that were deleted (as the pool's controller would); returns how
        many pods it moved or made."""
        api = self.api
        now = api.clock() if now is None else now
        moved = 0
        with self._lock:
            keys = list(self._keys)
        for key in keys:
            entry = api.store.get("pods", key)
            if entry is None:
                self._seen.pop(key, None)
                try:
                    name = key.split("/", 1)[1]
                    self._add(self._keys[key], name, int(name.rsplit("-", 1)[1]))
                    moved += 1
                except ApiError:
                    pass  # recreated by someone else meanwhile
                continue
            phase = entry.labels.get(PHASE_LABEL, "")
            seen_phase, since = self._seen.get(key, (None, now))
            if seen_phase != phase:
                self._seen[key] = (phase, now)
                since = now
            if phase in CLAIM_PHASES and now - since >= self.hold:
                moved += self._move(key, STOPPING, now, {}, {})
            elif phase == STOPPING and now - since >= self.stop_delay:
                # reset: what the last claim added goes, so the next claimer starts clean
                labels = {k: None for k in entry.labels if k not in _KEPT_LABELS}
                annotations = dict.fromkeys(orjson.loads(entry.raw)["metadata"].get(
                    "annotations") or {})
                annotations[IDLE_SINCE_ANNOTATION] = f"{now:.3f}"
                done = self._move(key, IDLE, now, labels, annotations)
                self.recycled += done
                moved += done
        return moved

    def _move(self, key: str, phase: str, now: float, labels: dict, annotations: dict) -> int:
        patch = {"metadata": {"labels": {**labels, PHASE_LABEL: phase}}}
        if annotations:
            patch["metadata"]["annotations"] = annotations
        try:
            self.api.patch("pods", key, MERGE, patch, MANAGER)
        except ApiError:
            return 0  # deleted or changed meanwhile: looked at again next step
        self._seen[key] = (phase, now)
        return 1
