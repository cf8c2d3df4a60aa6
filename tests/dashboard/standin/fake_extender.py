"""A scheduler extender answering as the captures' recording extender did
(../shared/k8s-wire/extender/tools/recext.py), for driving kube-scheduler's stand-in
without the real extender: filter keeps every node it is sent, preempt echoes the victims
it is sent (03a), bind makes the Binding itself and answers {} only once the API server
said 201, else the API server's reason as the Error."""
import contextlib
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import orjson
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from dashboard.standin import standin
from dashboard.standin.standin_queue import SchedulingQueue
from dashboard.standin.standin_view import ClusterView
from tests.waiting import wait_for


class FakeExtender:
    """An extender on a free port. `answers[verb]`, when set, is called with the body and
    returns (status, answer) or None for the default answer; `calls` records
    (verb, pod name, body) in order."""

    def __init__(self, v1):
        self.v1 = v1
        self.calls = []
        self.answers = {}
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out as two writes: with Nagle's algorithm on, the body
            # waits for the client's delayed ACK of the headers (about 40 ms a call).
            disable_nagle_algorithm = True

            def do_POST(self):
                body = orjson.loads(self.rfile.read(int(self.headers["Content-Length"])))
                verb = self.path.rsplit("/", 1)[-1]
                status, answer = fake.answer(verb, body)
                data = orjson.dumps(answer)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.address = "127.0.0.1:%d" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def answer(self, verb, body):
        pod = body.get("Pod") or {}
        name = body.get("PodName") or pod.get("metadata", {}).get("name")
        self.calls.append((verb, name, body))
        custom = self.answers.get(verb)
        answered = custom(body) if custom is not None else None
        if answered is not None:
            return answered
        if verb == "filter":
            return 200, {"NodeNames": body["NodeNames"], "Error": ""}
        if verb == "preempt":
            return 200, {"NodeNameToMetaVictims": body["NodeNameToMetaVictims"]}
        return 200, self.bind(body)

    def bind(self, body):
        try:
            self.v1.create_namespaced_pod_binding(
                body["PodName"], body["PodNamespace"],
                {"metadata": {"name": body["PodName"], "uid": body["PodUID"]},
                 "target": {"kind": "Node", "name": body["Node"]}}, _preload_content=False)
        except ApiException as exc:
            return {"Error": orjson.loads(exc.body)["message"]}
        return {}

    def verbs(self, pod=None):
        return [(verb, name) for verb, name, _ in self.calls if pod is None or name == pod]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@contextlib.contextmanager
def running_stand_in(sim, ignored_resources=frozenset()):
    """(v1, extender, scheduler): a FakeExtender and a StandIn calling it, on `sim`; the
    stand-in's fit filter ignores `ignored_resources`."""
    api_client = sim.api_client()
    v1 = client.CoreV1Api(api_client)
    extender = FakeExtender(v1)
    view = ClusterView(v1, watch_timeout=30).start()
    scheduler = standin.StandIn(v1, standin.HttpDoor(extender.address, 5.0), view,
                                SchedulingQueue(), ignored_resources)
    try:
        yield v1, extender, scheduler
    finally:
        scheduler.close()
        extender.close()
        api_client.close()


def settle(view, condition, what, timeout=10.0):
    """Apply the stand-in's view's watch events until it is synced (its first lists, the
    claims' included, are in) and `condition()` holds."""
    def synced():
        return view.sync(timeout) and condition()
    wait_for(synced, timeout, f"the stand-in's view to see {what}")
