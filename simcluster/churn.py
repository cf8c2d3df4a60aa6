"""Pod churn: a steady stream of cluster changes at `rate` actions per second.

Actions (chosen by weight): create a Pending pod as a controller would; bind one
of those to a random node as the default scheduler would (only when `scheduler`
is on: otherwise binding is left to the dashboard's own scheduler); delete a pod
(gracefully: the simulated kubelet finishes it); change a pod's labels; bump a
running pod's restart count. Every change goes through resources.Api. A pod labelled
`simcluster.io/keep` is never deleted: a demo's scene (the pod that waits for 64 GPUs)
or a test's fixture stays until whoever made it deletes it.

`steady` holds the pod count where it was when it was turned on: no creates while there
are more pods, no deletes while there are fewer. Without it, creates (which
always succeed) outran deletes (some of which hit a pod already going): a demo of
2,000 pods had 2,755 after 17 minutes.
"""

import random
import threading
import time
from collections import deque
from datetime import datetime, timezone

from simcluster.generate import PodSource
from simcluster.patch import MERGE
from simcluster.resources import Api
from simcluster.status import ApiError

DEFAULT_WEIGHTS = {"create": 2, "bind": 2, "delete": 2, "label": 1, "status": 1}
KEEP_LABEL = "simcluster.io/keep"
DRAWS = 8   # random picks a delete tries before giving up its turn (kept pods are few)


class Churn:
    def __init__(self, api: Api, source: PodSource, *, rate: float = 0.0,
                 scheduler: bool = False, weights: dict | None = None, seed: int = 0):
        self.api = api
        self.source = source
        self.rate = float(rate)
        self.scheduler = scheduler
        self.weights = dict(weights or DEFAULT_WEIGHTS)
        self.counts = dict.fromkeys(DEFAULT_WEIGHTS, 0)
        self.steady: int | None = None   # the pod count held, when on
        self._rng = random.Random(f"churn/{seed}")
        self._pending: deque = deque(maxlen=10000)  # keys of pods it created, for binding
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = None

    def knobs(self) -> dict:
        return {"rate": self.rate, "scheduler": self.scheduler, "weights": self.weights,
                "counts": dict(self.counts), "steady": self.steady}

    def update(self, rate: float | None = None, scheduler: bool | None = None,
               weights: dict | None = None, steady: bool | None = None) -> dict:
        if steady is not None:
            if not isinstance(steady, bool):
                raise ValueError("steady: true (hold the pod count as it is now) or false")
            self.steady = self._pod_count() if steady else None
        if rate is not None:
            self.rate = float(rate)
        if scheduler is not None:
            self.scheduler = bool(scheduler)
        if weights is not None:
            unknown = set(weights) - set(DEFAULT_WEIGHTS)
            if unknown:
                raise ValueError(f"unknown churn actions: {sorted(unknown)}")
            self.weights.update(weights)
        self._wake.set()
        return self.knobs()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="simcluster-churn", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        budget, last = 0.0, time.monotonic()
        while not self._stop.is_set():
            now = time.monotonic()
            budget = min(budget + self.rate * (now - last), max(self.rate, 1.0))
            last = now
            while budget >= 1 and not self._stop.is_set():
                self.step()
                budget -= 1
            self._wake.wait(0.5 if self.rate <= 0 else min(0.05, 1 / self.rate))
            self._wake.clear()

    def step(self) -> str | None:
        """Do one weighted action; returns its name, or None if it found nothing to do."""
        actions = [a for a in DEFAULT_WEIGHTS if a != "bind" or self.scheduler]
        action = self._rng.choices(actions, [self.weights.get(a, 0) for a in actions])[0]
        try:
            done = getattr(self, "_" + action)()
        except ApiError:
            done = False  # raced with another writer (gone, already bound...): skip
        if done:
            self.counts[action] += 1
            return action
        return None

    def _random_key(self, resource: str) -> str | None:
        store = self.api.store
        with store.lock:
            keys = store.resources[resource].keys
            return keys[self._rng.randrange(len(keys))] if keys else None

    def _pod_count(self) -> int:
        store = self.api.store
        with store.lock:
            return len(store.resources["pods"].keys)

    def _create(self) -> bool:
        if self.steady is not None and self._pod_count() > self.steady:
            return False
        pod = self.source.pending_pod(datetime.fromtimestamp(self.api.clock(), timezone.utc))
        meta = pod["metadata"]
        self.api.ensure_namespace(meta["namespace"])
        self.api.insert("pods", pod)
        self._pending.append((meta["namespace"], meta["name"]))
        return True

    def _bind(self) -> bool:
        node = self._random_key("nodes")
        if not self._pending or node is None:
            return False
        namespace, name = self._pending.popleft()
        self.api.bind(namespace, name, {"target": {"kind": "Node", "name": node}})
        return True

    def _delete(self) -> bool:
        if self.steady is not None and self._pod_count() < self.steady:
            return False
        for _ in range(DRAWS):
            key = self._random_key("pods")
            if key is None:
                return False
            entry = self.api.store.get("pods", key)
            if entry is not None and KEEP_LABEL not in entry.labels:
                namespace, name = key.split("/", 1)
                self.api.delete_pod(namespace, name)
                return True
        return False

    def _label(self) -> bool:
        key = self._random_key("pods")
        if key is None:
            return False
        self.api.patch("pods", key, MERGE, {"metadata": {"labels": {
            "simcluster.io/churn": str(self.counts["label"] + 1)}}}, "simcluster-churn")
        return True

    def _status(self) -> bool:
        key = self._random_key("pods")
        if key is None:
            return False
        namespace, name = key.split("/", 1)
        changed = []

        def restart(status):
            containers = status.get("containerStatuses") or []
            if status.get("phase") != "Running" or not containers:
                return
            changed.append(True)
            first = containers[0]
            first["restartCount"] = first.get("restartCount", 0) + 1
            first["lastState"] = {"terminated": {"exitCode": 137, "reason": "OOMKilled",
                                                 "startedAt": first["state"].get(
                                                     "running", {}).get("startedAt"),
                                                 "finishedAt": self.api.now(),
                                                 "containerID": first.get("containerID")}}
            first["state"] = {"running": {"startedAt": self.api.now()}}
        self.api.set_status(namespace, name, restart)
        return bool(changed)
