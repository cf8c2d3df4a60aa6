"""Replay: a recording (recording.py) played into the cluster, instead of synthetic churn.

Each record becomes what the API server would have done for it: an Add or Update stores
the object (a new resourceVersion, an ADDED or MODIFIED watch event), a Delete removes it
(a DELETED event carrying its last state). The records are played at `speed` times the
pace they were recorded at (their `time`s apart, divided by `speed`); speed 0 plays them
as fast as the store takes them. The simulator's replayer applies them in the same order
with the same three verbs; an Add of an object already there replaces it here, so the
state follows the trace, and a Delete of one not there is counted and skipped.

`reschedule` leaves the trace's pods unbound: an Add or Update of a pod that this cluster
has not bound clears spec.nodeName and puts it back to a Pending status, so the scheduler
(the stand-in, through the extender) places it; once it is bound here, later Updates keep
the node it was bound to.

Kinds other than pods and nodes (namespaces, priority classes, volumes, which the
simulator's recorder also writes) are counted and skipped: a namespace a pod needs is
created as the pod arrives.
"""
import threading
import time
from collections import Counter
from pathlib import Path

from simcluster.recording import Record, RecordingError, check_recording, records
from simcluster.resources import Api

RESOURCES = {"Pod": "pods", "Node": "nodes"}
# What a pod's status holds before a scheduler or kubelet touched it: phase Pending and
# the QoS class admission set (defaults.py's new pod).
_PENDING_STATUS_KEPT = ("qosClass",)


class Replay:
    """Plays the recording at `path`, a line at a time (a recording may be larger than
    memory), once every line is checked here (RecordingError naming a bad one, before
    anything is played)."""

    def __init__(self, api: Api, path, *, speed: float = 1.0, reschedule: bool = False,
                 clock=time.monotonic):
        if speed < 0:
            raise ValueError("speed: 0 (as fast as possible) or a positive factor")
        self.api = api
        self.path = Path(path)
        self.summary = check_recording(path)
        self.speed = float(speed)
        self.reschedule = reschedule
        self.clock = clock
        self.played = 0                  # records applied so far
        self.recorded_at: float | None = None   # the time of the last one applied
        self.missing = 0                 # Deletes of objects not there
        self.skipped: Counter = Counter()   # kinds not replayed
        self.error = ""                  # why it stopped early (the file changed under it)
        self.started_at: float | None = None   # wall-clock epoch
        self.finished_at: float | None = None
        self._stop = threading.Event()
        self._thread = None

    # -- control ---------------------------------------------------------------------------
    def start(self) -> "Replay":
        self.started_at = time.time()
        self._thread = threading.Thread(target=self.run, name="simcluster-replay", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=5)

    def wait(self, timeout: float | None = None) -> bool:
        """Whether every record was played within `timeout` seconds."""
        if self._thread:
            self._thread.join(timeout)
        return self.done

    @property
    def done(self) -> bool:
        return self.played == self.summary.events

    def state(self) -> dict:
        """Where the replay is: record i of n, the recorded time of the last one played
        (epoch seconds; None before the first), the speed, and what was skipped."""
        return {"source": self.path.name, "events": self.summary.events,
                "played": self.played, "recorded_at": self.recorded_at,
                "recorded_from": self.summary.first_at, "recorded_until": self.summary.last_at,
                "speed": self.speed, "reschedule": self.reschedule,
                "started_at": self.started_at, "finished_at": self.finished_at,
                "missing": self.missing, "skipped": dict(self.skipped), "error": self.error}

    # -- playing -----------------------------------------------------------------------------
    def run(self) -> None:
        begun, first = self.clock(), self.summary.first_at
        try:
            for record in records(self.path):
                if self.speed > 0:
                    wait = begun + (record.at - first) / self.speed - self.clock()
                    if wait > 0 and self._stop.wait(wait):
                        return
                elif self._stop.is_set():
                    return
                self.apply(record)
                self.played += 1
                self.recorded_at = record.at
        except (RecordingError, OSError) as error:   # checked whole, then changed
            self.error = str(error)
            return
        self.finished_at = time.time()

    def apply(self, record: Record) -> None:
        resource = RESOURCES.get(record.kind)
        if resource is None:
            self.skipped[record.kind] += 1
            return
        meta = record.resource["metadata"]
        key = f"{meta['namespace']}/{meta['name']}" if resource == "pods" else meta["name"]
        store = self.api.store
        with store.lock:
            current = store.get(resource, key)
            if record.event == "Delete":
                if current is None:
                    self.missing += 1
                else:
                    store.remove(resource, self.api.read(resource, key))
                return
            obj = dict(record.resource)
            obj["metadata"] = dict(meta)
            if resource == "pods":
                self.api.ensure_namespace(meta["namespace"])
                if self.reschedule:
                    obj = self._unbound(obj, current)
            store.put(resource, obj)

    def _unbound(self, pod: dict, current) -> dict:
        """The pod as this cluster's scheduler left it: bound where it bound it, else
        Pending with no node."""
        spec = dict(pod.get("spec") or {})
        bound_here = current and self.api.read("pods", _pod_key(pod))["spec"].get("nodeName")
        if bound_here:
            spec["nodeName"] = bound_here
            return {**pod, "spec": spec}
        spec.pop("nodeName", None)
        status = pod.get("status") or {}
        if status.get("phase") in ("Succeeded", "Failed"):
            return {**pod, "spec": spec}
        pending = {k: status[k] for k in _PENDING_STATUS_KEPT if k in status}
        return {**pod, "spec": spec, "status": {"phase": "Pending", **pending}}


def _pod_key(pod: dict) -> str:
    return f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
