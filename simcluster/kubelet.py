"""Simulated kubelets for every node: what a real node does after the API server's part.

Without them, gracefully deleted pods would stay Terminating forever (no kubelet
in the captures) and bound pods would stay Pending. This one follows the pod
history in-process (it sees events hidden from watchers by the lost-event fault).
With `auto` a thread calls step() all the time; tests call step(now) themselves.
  * a terminating bound pod is removed (delete with grace 0) when its
    deletionTimestamp passes, or after `grace_cap` seconds if that is sooner;
  * a newly bound Pending pod becomes Running after `start_delay` seconds.
"""

import heapq
import ipaddress
import random
import threading
from datetime import datetime, timezone

import orjson

from simcluster.generate import running_status
from simcluster.resources import Api
from simcluster.status import ApiError


def _parse_time(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()


class Kubelet:
    def __init__(self, api: Api, *, auto: bool = True, finish_deletes: bool = True,
                 start_pods: bool = True, start_delay: float = 1.0,
                 grace_cap: float | None = None, seed: int = 0):
        self.api = api
        self.auto = auto
        self.finish_deletes = finish_deletes
        self.start_pods = start_pods
        self.start_delay = start_delay
        self.grace_cap = grace_cap
        self._rng = random.Random(f"kubelet/{seed}")
        self._due: list = []   # heap of (time, action, namespace, name, uid)
        self._seq = None       # position in the pod history
        self._lock = threading.Lock()   # step() may race between the thread and a test
        self._started = False
        self._stop = None
        self._thread = None

    def knobs(self) -> dict:
        return {"auto": self.auto, "finish_deletes": self.finish_deletes,
                "start_pods": self.start_pods, "start_delay": self.start_delay,
                "grace_cap": self.grace_cap}

    def update(self, **knobs) -> dict:
        for name, value in knobs.items():
            if name not in self.knobs():
                raise ValueError(f"unknown kubelet knob: {name}")
            setattr(self, name, value)
        if self._started:
            self._run_thread(self.auto)
        return self.knobs()

    def start(self) -> None:
        self._started = True
        self._run_thread(self.auto)

    def stop(self) -> None:
        self._started = False
        self._run_thread(False)

    def _run_thread(self, wanted: bool) -> None:
        if wanted and self._thread is None:
            self._stop = threading.Event()
            self._thread = threading.Thread(target=self._run, args=(self._stop,),
                                            name="simcluster-kubelet", daemon=True)
            self._thread.start()
        elif not wanted and self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=5)
            self._thread = None

    def _run(self, stop: threading.Event) -> None:
        while not stop.wait(0.05):
            self.step()

    def step(self, now: float | None = None) -> int:
        """Notice new pod events, then do whatever work is due; returns actions taken.
        Work whose knob is off waits until it is turned on."""
        now = self.api.clock() if now is None else now
        with self._lock:
            self._observe(now)
            done, waiting = 0, []
            while self._due and self._due[0][0] <= now:
                item = heapq.heappop(self._due)
                _, action, namespace, name, uid = item
                enabled = self.finish_deletes if action == "delete" else self.start_pods
                if not enabled:
                    waiting.append(item)
                    continue
                try:
                    if action == "delete":
                        self.api.delete_pod(namespace, name, 0, {"uid": uid})
                        done += 1
                    else:
                        done += self._start(namespace, name, uid, now)
                except ApiError:
                    pass  # gone, replaced or changed meanwhile: nothing left to do
            for item in waiting:
                heapq.heappush(self._due, item)
            return done

    def _observe(self, now: float) -> None:
        store = self.api.store
        res = store.resources["pods"]
        with store.lock:
            if self._seq is None or self._seq < res.first_seq:
                entries = list(res.entries.values())  # first run, or fell behind: rescan
            else:
                entries = [ev.entry for ev in res.events[self._seq - res.first_seq:]
                           if ev.type != "DELETED"]
            self._seq = res.next_seq
        for e in entries:
            if e.fields["spec.nodeName"] and (e.fields["status.phase"] == "Pending"
                                              or b'"deletionTimestamp"' in e.raw):
                self._schedule(orjson.loads(e.raw), now)

    def _schedule(self, pod: dict, now: float) -> None:
        meta, spec = pod["metadata"], pod["spec"]
        if not spec.get("nodeName"):
            return
        key = (meta["namespace"], meta["name"], meta["uid"])
        if meta.get("deletionTimestamp"):
            due = _parse_time(meta["deletionTimestamp"])
            if self.grace_cap is not None:
                due = min(due, now + self.grace_cap)
            heapq.heappush(self._due, (due, "delete", *key))
        elif (pod.get("status") or {}).get("phase") == "Pending":
            heapq.heappush(self._due, (now + self.start_delay, "start", *key))

    def _start(self, namespace: str, name: str, uid: str, now: float) -> int:
        api = self.api
        with api.store.lock:
            pod = api.read("pods", f"{namespace}/{name}")
            status = pod.get("status") or {}
            if (pod["metadata"]["uid"] != uid or pod["metadata"].get("deletionTimestamp")
                    or status.get("phase") != "Pending"):
                return 0
            node = api.store.get("nodes", pod["spec"]["nodeName"])
            host_ip, pod_ip = "10.0.0.1", f"10.244.0.{self._rng.randint(2, 254)}"
            if node is not None:
                node_obj = orjson.loads(node.raw)
                host_ip = next((a["address"] for a in node_obj["status"].get("addresses", ())
                                if a["type"] == "InternalIP"), host_ip)
                cidr = (node_obj.get("spec") or {}).get("podCIDR")
                if cidr:
                    net = ipaddress.ip_network(cidr)
                    pod_ip = str(net[self._rng.randint(2, net.num_addresses - 2)])
            pod["status"] = running_status(pod, host_ip, pod_ip,
                                           datetime.fromtimestamp(now, timezone.utc), self._rng)
            api.update("pods", f"{namespace}/{name}", pod, "kubelet", subresource="status")
        return 1
