"""Helpers for the REST API tests: read-model rows, JSON errors, and a real cache owner
(the owner's own loop in a thread, on the run's Redis and the test database)."""
import threading
from datetime import datetime, timezone

from dashboard.models import NodeRecord, PodRecord, Transition
from dashboard.owner.extender.owner_calls import OwnerCalls
from dashboard.owner.projection import ProjectionWriter
from dashboard.owner.runner import build_owner, step
from dashboard.wire.keys import OWNER_COMMANDS, OWNER_REPLY_PREFIX
from tests.decoded_feed import synced_items

AT = datetime(2026, 11, 22, 11, 0, tzinfo=timezone.utc)


def pod_record(name, **fields) -> PodRecord:
    values = {"uid": f"uid-{name}", "namespace": "team", "name": name, "state": "Added",
              "node": "node-a", "zone": "zone-1", "changed_at": AT}
    values.update(fields)
    return PodRecord.objects.create(**values)


def node_record(name, **fields) -> NodeRecord:
    resource = {"milli_cpu": 1000, "memory": 2**30, "ephemeral_storage": 0,
                "allowed_pod_number": 0, "scalar_resources": {}}
    values = {"name": name, "zone": "zone-1", "tree_index": 0, "pods": 1,
              "requested": resource, "non_zero_requested": resource,
              "allocatable": dict(resource, milli_cpu=8000, allowed_pod_number=110),
              "changed_at": AT}
    values.update(fields)
    return NodeRecord.objects.create(**values)


def transition(seq, key="uid-p", **fields) -> Transition:
    values = {"seq": seq, "at": AT, "kind": "pod_updated", "key": key, "namespace": "team",
              "name": "p", "node": "node-a", "from_state": "Added", "to_state": "Added",
              "cause": "watch"}
    values.update(fields)
    return Transition.objects.create(**values)


def error_of(response, status) -> str:
    """The message of a JSON error response that must have `status`."""
    assert response.status_code == status, (response.status_code, response.content[:300])
    assert response["Content-Type"].startswith("application/json")
    message = response.json()["error"]
    assert isinstance(message, str) and message
    return message


def state_of(uid):
    record = PodRecord.objects.filter(uid=uid).first()
    return record and record.state


def clear_commands(client):
    """No command, reply or queued bind left over from another test."""
    client.delete(OWNER_COMMANDS, "celery")
    for key in client.scan_iter(OWNER_REPLY_PREFIX + "*"):
        client.delete(key)


class OwnerThread:
    """The cache owner as `manage.py watch` builds it (cache, commands over Redis, writer,
    publisher, extender), its own loop step run in a thread; the cluster is handed to it as
    the decoder process would (decoded lists), so no API server is needed."""

    def __init__(self, redis, nodes, pods):
        self.writer = ProjectionWriter().start()
        self.owner = build_owner(redis, self.writer)
        for item in synced_items(nodes, pods):
            self.owner.feed.put(item)
        # kube-scheduler's verbs, as the owner's listener hands them to the loop
        self.calls = OwnerCalls(self.owner.scheduler_verbs, "kube-scheduler")
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="test-owner", daemon=True)

    def _run(self):
        deadlines = {"flush": 0.0, "snapshot": 0.0}
        while not self.stop.is_set():
            step(self.owner, deadlines, None, calls=self.calls)

    def verb(self, op, body):
        """One kube-scheduler call to the extender, answered in the owner's loop."""
        return self.calls.call(op, body, 5.0)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(10)
        self.owner.flush()
        self.writer.close()
