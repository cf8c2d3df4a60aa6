"""Recording a cluster: its nodes and pods (and priority classes) as JSON lines, in
kube-scheduler-simulator's recorder format (simcluster/recording.py), for a replay.

    recorder = ClusterRecorder(core_api, RecordingWriter(path), stop)
    recorder.run()        # lists, writes an Add per object, then every watch event
    writer.close()        # until `stop` is set

Pods and nodes go through the reflector (reflector.py), which survives 410s, bookmarks and
cut connections as the owner's feed does. Both kinds are listed before either is watched,
so the file starts with the whole listing. Priority classes are listed once where the
server serves them (the simulated cluster does not); they change rarely and nothing here
schedules by them live.

Which verb a line gets follows an informer's handlers, as the simulator's recorder (built
on informers) writes them: an object not seen before is an Add, one already seen an Update
(even a watch's ADDED after a re-watch), a deletion a Delete. A relist after a 410 is
compared with what was seen: new objects are Adds, changed ones (another resourceVersion)
Updates, vanished ones Deletes, so the recording stays a complete history.
"""
import threading
import time

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from simcluster.recording import RecordingWriter, record_line

from dashboard.kube.client import read_json
from dashboard.kube.reflector import KINDS, Reflector, Relisted, Stopped, Watched

# What a list's items lack and a recorded object carries (as a watch event's object does).
_TYPE = {"pods": {"kind": "Pod", "apiVersion": "v1"},
         "nodes": {"kind": "Node", "apiVersion": "v1"}}
_PRIORITY_CLASS = {"kind": "PriorityClass", "apiVersion": "scheduling.k8s.io/v1"}
FLUSH_EVERY = 1.0    # seconds between flushes of the lines written


def _key(kind: str, obj: dict) -> str:
    meta = obj["metadata"]
    return f"{meta.get('namespace')}/{meta['name']}" if kind == "pods" else meta["name"]


class ClusterRecorder:
    def __init__(self, api: client.CoreV1Api, writer: RecordingWriter,
                 stop: threading.Event | None = None, clock=time.time, **reflector_options):
        self.api = api
        self.writer = writer
        self.stop = stop if stop is not None else threading.Event()
        self.clock = clock
        self.counts = dict.fromkeys(("Add", "Update", "Delete"), 0)
        self._seen = {kind: {} for kind in KINDS}     # kind -> {key: resourceVersion}
        self._lock = threading.RLock()    # one item at a time, from the two reflectors' threads
        self.reflectors = [Reflector(api, kind, self._take, stop=self.stop, **reflector_options)
                           for kind in KINDS]

    def run(self) -> None:
        """Record until the stop event is set; every line written is whole."""
        try:
            for reflector in self.reflectors:
                self._take(reflector.list_once())
        except Stopped:
            return
        self._record_priority_classes()
        threads = [threading.Thread(target=r.run, kwargs={"resume": True},
                                    name=f"record-{r.kind}", daemon=True)
                   for r in self.reflectors]
        for thread in threads:
            thread.start()
        while not self.stop.wait(FLUSH_EVERY):
            with self._lock:
                self.writer.flush()
        for reflector in self.reflectors:
            reflector.stop()
        for thread in threads:
            thread.join(timeout=10)

    @property
    def events(self) -> int:
        return sum(self.counts.values())

    def seen(self, kind: str) -> dict:
        """{key: resourceVersion} of the `kind`'s objects as recorded so far."""
        with self._lock:
            return dict(self._seen[kind])

    def _write(self, event: str, obj: dict) -> None:
        line = record_line(self.clock(), event, obj)
        with self._lock:
            self.writer.write(line)
            self.counts[event] += 1

    def _take(self, item) -> None:
        """The reflectors' sink (their threads): a list or a watch event, as lines. Under
        the lock throughout, so `seen()` never reads a kind half changed."""
        with self._lock:
            self._take_one(item)

    def _take_one(self, item) -> None:
        if isinstance(item, Relisted):
            self._relisted(item)
        elif isinstance(item, Watched):
            self._watched(item)

    def _watched(self, watched: Watched) -> None:
        seen = self._seen[watched.kind]
        key = _key(watched.kind, watched.obj)
        if watched.type == "DELETED":
            seen.pop(key, None)
            self._write("Delete", watched.obj)
            return
        event = "Update" if key in seen else "Add"
        seen[key] = watched.obj["metadata"].get("resourceVersion")
        self._write(event, watched.obj)

    def _relisted(self, listed: Relisted) -> None:
        seen, now = self._seen[listed.kind], {}
        kind_fields = _TYPE[listed.kind]
        for item in listed.items:
            key, version = _key(listed.kind, item), item["metadata"].get("resourceVersion")
            now[key] = version
            if seen.get(key, object()) != version:
                self._write("Update" if key in seen else "Add", {**kind_fields, **item})
        for key in seen.keys() - now.keys():
            namespace, _, name = key.rpartition("/")
            self._write("Delete", {**kind_fields, "metadata": {"name": name, "namespace":
                                                                namespace or None}})
        self._seen[listed.kind] = now

    def _record_priority_classes(self) -> None:
        scheduling = client.SchedulingV1Api(self.api.api_client)
        try:
            listed = read_json(scheduling.list_priority_class(_preload_content=False))
        except ApiException as e:
            if e.status in (403, 404):   # not served, or not ours to read: none recorded
                return
            raise
        for item in listed.get("items") or ():
            self._write("Add", {**_PRIORITY_CLASS, **item})
