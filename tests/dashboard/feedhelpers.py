"""Helpers for the reflector tests: a recording sink that mirrors what it gets like the
owner's cache would, a gated sleep, reflectors run in threads, a recording client, and a
tiny scripted API server for byte-level cases the simulated cluster cannot produce
(malformed lines, silent streams, HTTP errors on a watch)."""

import threading
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qsl, urlsplit

import orjson
from kubernetes import client

from simcluster import SimCluster

from dashboard.kube.reflector import Reflector, Relisted, Watched

WAIT = 10.0  # deadline for anything the tests wait on


def make_sim(cluster, **kw) -> SimCluster:
    kw.setdefault("bookmark_interval", 0.2)
    return SimCluster(cluster=cluster, kubelet=False, namespaces=3, **kw)


# -- what the cluster holds, in the form the mirror keeps -----------------------------

def identity(kind: str, obj: dict) -> str:
    return obj["metadata"]["uid" if kind == "pods" else "name"]


def item_form(obj: dict) -> dict:
    """Watch objects carry kind/apiVersion, list items do not: compare without them."""
    return {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}


def cluster_state(sim: SimCluster, kind: str) -> dict:
    objs = sim.pods() if kind == "pods" else sim.nodes()
    return {identity(kind, o): o for o in objs}


def pod_body(name: str, **labels) -> dict:
    return {"metadata": {"name": name, "labels": labels or {"app": name}},
            "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"requests": {"cpu": "100m"}}}]}}


class Recorder:
    """A sink: keeps every item, and applies them to a mirror the way the owner would
    (a Relisted replaces it, a Watched sets or removes one object)."""

    def __init__(self, kind: str):
        self.kind = kind
        self.items: list = []
        self.mirror: dict = {}
        self.cond = threading.Condition()

    def __call__(self, item) -> None:
        with self.cond:
            self.items.append(item)
            if isinstance(item, Relisted):
                self.mirror = {identity(self.kind, o): item_form(o) for o in item.items}
            elif item.type == "DELETED":
                self.mirror.pop(identity(self.kind, item.obj), None)
            else:
                self.mirror[identity(self.kind, item.obj)] = item_form(item.obj)
            self.cond.notify_all()

    @property
    def relists(self) -> list:
        with self.cond:
            return [i for i in self.items if isinstance(i, Relisted)]

    @property
    def watched(self) -> list:
        with self.cond:
            return [i for i in self.items if isinstance(i, Watched)]

    def events_for(self, name: str) -> list:
        return [w for w in self.watched if w.obj["metadata"]["name"] == name]

    def wait_for(self, predicate, what: str, timeout: float = WAIT) -> None:
        with self.cond:
            if not self.cond.wait_for(lambda: predicate(self), timeout):
                raise AssertionError(f"timed out waiting for {what}; got "
                                     f"{[type(i).__name__ for i in self.items][-10:]}")

    def wait_mirrors(self, sim: SimCluster, timeout: float = WAIT) -> None:
        self.wait_for(lambda rec: rec.mirror == cluster_state(sim, self.kind),
                      "the mirror to equal the cluster", timeout)


def wait_reflector(r: Reflector, predicate, what: str, timeout: float = WAIT) -> None:
    if not r.wait_for(predicate, timeout):
        raise AssertionError(f"timed out waiting for {what}: state={r.state} "
                             f"stats={r.stats} rv={r.resource_version}")


class GatedSleep:
    """An injected sleep that records each delay and blocks until released, so a test can
    change the cluster while the reflector is known to be between connections."""

    def __init__(self):
        self.delays: list = []
        self.entered = threading.Event()
        self.gate = threading.Event()

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        self.entered.set()
        assert self.gate.wait(WAIT), "GatedSleep never released"
        self.gate.clear()

    def wait_entered(self) -> None:
        assert self.entered.wait(WAIT), "the reflector never backed off"
        self.entered.clear()

    def release(self) -> None:
        self.gate.set()


class Running:
    """Reflectors started by a test; all stopped (and checked stopped) at teardown."""

    def __init__(self, sim: SimCluster):
        self.sim = sim
        self.started: list = []

    def start(self, kind: str = "pods", api=None, synced: bool = True, **kw):
        """A running reflector and its Recorder; waits for the first list and for the
        watch's first bookmark (so the server has registered the stream)."""
        rec = Recorder(kind)
        api_client = None
        if api is None:
            api_client = self.sim.api_client()
            api = client.CoreV1Api(api_client)
        kw.setdefault("watch_timeout", 60)
        kw.setdefault("rand", lambda: 0.5)
        r = Reflector(api, kind, rec, **kw)
        thread = r.start()
        self.started.append((r, thread, api_client))
        if synced:
            rec.wait_for(lambda rec: rec.relists, "the first list")
            wait_reflector(r, lambda r: r.state == "watching" and r.stats["bookmarks"] > 0,
                           "the first bookmark")
        return r, rec

    def stop_all(self) -> None:
        for r, thread, api_client in self.started:
            r.stop()
            thread.join(WAIT)
            assert not thread.is_alive(), f"{r.kind} reflector did not stop"
            if api_client is not None:
                api_client.close()


class RecordingApi(client.CoreV1Api):
    """The real client, remembering each list call (its paging arguments and outcome);
    `after_first_page` runs once, between the first page and the next request."""

    def __init__(self, api_client, after_first_page=None):
        super().__init__(api_client)
        self.calls: list = []
        self.after_first_page = after_first_page

    def _record(self, method, kw):
        if kw.get("watch"):
            return method(**kw)
        call = {"limit": kw.get("limit"), "continue": kw.get("_continue"), "status": 200}
        if kw.get("field_selector"):
            call["field_selector"] = kw["field_selector"]
        self.calls.append(call)
        try:
            return method(**kw)
        except client.ApiException as e:
            call["status"] = e.status
            raise
        finally:
            if len(self.calls) == 1 and self.after_first_page:
                hook, self.after_first_page = self.after_first_page, None
                hook()

    def list_pod_for_all_namespaces(self, **kw):
        return self._record(super().list_pod_for_all_namespaces, kw)

    def list_node(self, **kw):
        return self._record(super().list_node, kw)


# -- a scripted API server, for what the simulated cluster cannot send ----------------

class Script:
    """What the scripted server answers: `list_items` for a list, and for a watch
    either `watch_status` + `watch_body` (an HTTP error) or `watch_chunks` sent one
    chunk at a time (then the final chunk, unless `hold` keeps the stream open and
    silent after them)."""

    def __init__(self):
        self.list_items: list = []
        self.list_rv = "10"
        self.watch_chunks: list = []
        self.watch_status = 200
        self.watch_body = b""
        self.hold = threading.Event()   # set: send nothing more and wait until released
        self.released = threading.Event()
        self.requests: list = []


class ScriptHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True   # headers and body are two writes: no delayed-ACK wait

    def log_message(self, *args):
        pass

    def do_GET(self):
        script: Script = self.server.script
        url = urlsplit(self.path)
        query = dict(parse_qsl(url.query))
        script.requests.append(self.path)
        if query.get("watch") != "true":
            body = orjson.dumps({"kind": "PodList", "apiVersion": "v1",
                                 "metadata": {"resourceVersion": script.list_rv},
                                 "items": script.list_items})
            self._head(200, len(body))
            self.wfile.write(body)
            return
        if script.watch_status != 200:
            self._head(script.watch_status, len(script.watch_body))
            self.wfile.write(script.watch_body)
            return
        self._head(200, None)
        self.wfile.flush()
        for chunk in script.watch_chunks:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.flush()
        if script.hold.is_set():
            script.released.wait(WAIT)
            self.close_connection = True
            return
        self.wfile.write(b"0\r\n\r\n")

    def _head(self, code, length):
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        if length is None:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(length))
        self.end_headers()


def core_api_at(url: str) -> client.CoreV1Api:
    """The official client on `url`; module-level, so a decoder process can be handed it."""
    return client.CoreV1Api(client.ApiClient(client.Configuration(host=url)))
