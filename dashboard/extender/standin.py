"""kube-scheduler's stand-in: the embedded default schedules through the extender.

The simulated cluster has no kube-scheduler, so `manage.py up` has Celery beat run
this every SCHEDVIEW_SCHEDULE_PERIOD (`dashboard.tasks.schedule_pending`). It calls
the owner's extender exactly as a kube-scheduler configured with it would
(nodeCacheCapable, verbs filter, bind and preempt), so the demo runs the whole
algorithm (affinity, taints, preemption) and the statuses page shows its decisions.

One period, `schedule(api, door, limit)`:

1. list the pending pods (no node, not finished, not being deleted, for
   kube-scheduler's default profile), oldest first, and the node names;
2. per pod, up to `limit`: filter with every node name. A node listed and no Error:
   bind the pod there. None listed but some FailedNodes (resolvable: the extender
   names the victims' nodes there): kube-scheduler's preemption. Its candidates are
   the lower-priority pods on those nodes; the extender answers its own victims;
   those on the node with the fewest are deleted (unless already terminating) and
   the pod is filtered again in a later period. Otherwise the pod waits, its reasons
   kept in the extender's statuses.

The door (`door()`): the owner's own listener at SCHEDVIEW_EXTENDER_ADDRESS over one
kept-alive connection per worker process, as kube-scheduler keeps its connections;
with the address empty, the owner commands the web's /extender views send. A
refused call (HTTP 400) skips the pod, as kube-scheduler moves on to the next one;
anything else (owner not leading yet, listener down, cluster down, an Error from the
extender) is logged in one line and ends the period: the next one tries again.
Left out: nominatedNodeName, PodDisruptionBudgets, kube-scheduler's own plugins.
"""
import http.client
import logging
import os

import orjson
from django.conf import settings
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from dashboard.feed.commands import CommandError, send
from dashboard.kube import read_json

from .answers import ACTOR, USER_ERRORS, VERB_OPS
from .listener import PREFIX, parse_address

log = logging.getLogger(__name__)

SCHEDULER_NAME = "default-scheduler"
# kube-scheduler's informer of unscheduled pods selects these fields.
UNSCHEDULED = "spec.nodeName=,status.phase!=Succeeded,status.phase!=Failed"
KUBE_TIMEOUT = 10.0      # seconds for one Kubernetes API request
OUTCOMES = ("bind", "wait", "preempt", "refused", "victims")


class Unavailable(Exception):
    """The extender cannot answer now: the period ends."""


class Refused(Exception):
    """The extender refused this pod's call (a user error): the next pod is tried."""


# --- the two doors to the owner's extender ---------------------------------------------------

class HttpDoor:
    """The owner's listener over one kept-alive HTTP/1.1 connection (http.client, as the
    extender bench calls it: urllib3's pool costs twice the CPU)."""

    def __init__(self, address: str, timeout: float):
        self.host, self.port = parse_address(address)
        self.timeout = timeout
        self._connection = None

    def call(self, verb: str, body: dict) -> dict:
        while True:
            fresh = self._connection is None
            try:
                status, raw = self._post(verb, body)
                break
            except (OSError, http.client.HTTPException) as exc:
                self.close()
                # A kept-alive connection the listener had closed: once more on a new one,
                # as Go's client retries on a reused connection.
                if fresh or not isinstance(exc, (ConnectionResetError, BrokenPipeError)):
                    raise Unavailable(f"the extender at {self.host}:{self.port}: "
                                      f"{type(exc).__name__}: {exc}") from None
        try:
            answer = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise Unavailable(f"{verb} answered {status} with no JSON") from None
        if status == 200:
            return answer
        error = answer.get("Error", "") if isinstance(answer, dict) else ""
        if status == 400:
            raise Refused(error)
        raise Unavailable(f"{verb} answered {status}: {error}")

    def _post(self, verb, body):
        if self._connection is None:
            self._connection = http.client.HTTPConnection(self.host, self.port,
                                                          timeout=self.timeout)
        self._connection.request("POST", PREFIX + verb, body=orjson.dumps(body),
                                 headers={"Content-Type": "application/json"})
        response = self._connection.getresponse()
        raw = response.read()
        if response.will_close:
            self.close()
        return response.status, raw

    def close(self):
        if self._connection is not None:
            self._connection.close()
            self._connection = None


class CommandDoor:
    """The owner's commands over Redis, as the web's /extender views send them."""

    def call(self, verb: str, body: dict) -> dict:
        try:
            return send(VERB_OPS[verb], body, actor=ACTOR,
                        timeout=settings.SCHEDVIEW_EXTENDER_TIMEOUT)
        except CommandError as exc:
            if exc.status in USER_ERRORS:
                raise Refused(exc.message) from None
            raise Unavailable(exc.message) from None

    def close(self):
        pass


_doors = {}


def door():
    """This process's door for the current setting, kept between periods so the HTTP
    connection stays alive (a new worker process opens its own)."""
    address = settings.SCHEDVIEW_EXTENDER_ADDRESS
    key = (os.getpid(), address)
    found = _doors.get(key)
    if found is None:
        for old in _doors.values():
            old.close()
        _doors.clear()
        # The listener waits up to the extender timeout for the owner, then answers.
        found = _doors[key] = (HttpDoor(address, settings.SCHEDVIEW_EXTENDER_TIMEOUT + 5.0)
                               if address else CommandDoor())
    return found


# --- the cluster, as kube-scheduler's informers see it ---------------------------------------

def pending_pods(api) -> list:
    """The pods kube-scheduler would schedule, oldest first."""
    pods = read_json(api.list_pod_for_all_namespaces(field_selector=UNSCHEDULED,
                                                 _preload_content=False,
                                                 _request_timeout=KUBE_TIMEOUT))["items"]
    pods = [p for p in pods if not p["metadata"].get("deletionTimestamp")
            and (p.get("spec") or {}).get("schedulerName", SCHEDULER_NAME) == SCHEDULER_NAME]
    pods.sort(key=lambda p: (p["metadata"].get("creationTimestamp") or "",
                             p["metadata"].get("namespace") or "", p["metadata"]["name"]))
    return pods


def node_names(api) -> list:
    nodes = read_json(api.list_node(_preload_content=False, _request_timeout=KUBE_TIMEOUT))
    return [n["metadata"]["name"] for n in nodes["items"]]


def _priority(pod) -> int:
    return (pod.get("spec") or {}).get("priority") or 0


class BoundPods:
    """The bound pods by node, listed at most once a period, and only when a pod may
    preempt (most periods need none)."""

    def __init__(self, api):
        self.api = api
        self._by_node = None
        self.by_uid = {}

    def on(self, node: str) -> list:
        if self._by_node is None:
            self._by_node = {}
            listed = read_json(self.api.list_pod_for_all_namespaces(
                field_selector="spec.nodeName!=", _preload_content=False,
                _request_timeout=KUBE_TIMEOUT))["items"]
            for pod in listed:
                self._by_node.setdefault(pod["spec"]["nodeName"], []).append(pod)
                self.by_uid[pod["metadata"]["uid"]] = pod
        return self._by_node.get(node, [])


# --- one period --------------------------------------------------------------------------------

def schedule(api, extender, limit: int = 20) -> dict:
    """Up to `limit` pending pods through `extender` (a door); returns the outcomes' counts:
    bind (accepted), wait, preempt, refused, and victims deleted."""
    counts = dict.fromkeys(OUTCOMES, 0)
    try:
        pods = pending_pods(api)[:limit]
        names = node_names(api) if pods else []
        bound = BoundPods(api)
        for pod in pods:
            try:
                outcome, victims = _schedule_one(api, extender, pod, names, bound)
            except Refused as exc:
                meta = pod["metadata"]
                log.info("the extender refused pod %s/%s: %s", meta.get("namespace"),
                         meta["name"], exc)
                outcome, victims = "refused", 0
            counts[outcome] += 1
            counts["victims"] += victims
    except Unavailable as exc:
        log.warning("scheduling pending pods: %s; trying again next period", exc)
    except (ApiException, HTTPError, OSError) as exc:
        reason = exc.reason if isinstance(exc, ApiException) else exc
        log.warning("scheduling pending pods: the cluster: %s: %s; trying again next period",
                    type(exc).__name__, reason)
    return counts


def _schedule_one(api, extender, pod, names, bound):
    """(outcome, victims deleted): ("bind" | "wait" | "preempt", n)."""
    meta = pod["metadata"]
    result = extender.call("filter", {"Pod": pod, "Nodes": None, "NodeNames": names})
    if result.get("Error"):
        raise Unavailable(f"filter of pod {meta.get('namespace')}/{meta['name']}: "
                          f"{result['Error']}")
    feasible = result.get("NodeNames") or []
    if feasible:
        answer = extender.call("bind", {"PodName": meta["name"],
                                        "PodNamespace": meta.get("namespace", ""),
                                        "PodUID": meta["uid"], "Node": feasible[0]})
        if answer.get("Error"):
            raise Refused(answer["Error"])
        return "bind", 0
    failed = result.get("FailedNodes") or {}
    if failed and (pod.get("spec") or {}).get("preemptionPolicy") != "Never":
        deleted = _preempt(api, extender, pod, failed, bound)
        if deleted is not None:
            return "preempt", deleted
    return "wait", 0


def _preempt(api, extender, pod, failed, bound):
    """kube-scheduler's preemption: the victims deleted, or None when nothing is to be
    preempted (no lower-priority pod on a failed node, or the extender names no victim)."""
    priority = _priority(pod)
    candidates = {}
    for node in failed:
        uids = [p["metadata"]["uid"] for p in bound.on(node) if _priority(p) < priority]
        if uids:
            candidates[node] = {"Pods": [{"UID": u} for u in uids], "NumPDBViolations": 0}
    if not candidates:
        return None
    answer = extender.call("preempt", {"Pod": pod, "NodeNameToVictims": None,
                                       "NodeNameToMetaVictims": candidates})
    chosen = answer.get("NodeNameToMetaVictims") or {}
    if not chosen:
        return None
    node = min(chosen, key=lambda n: (len(chosen[n].get("Pods") or ()), n))
    deleted = 0
    for victim in chosen[node].get("Pods") or ():
        target = bound.by_uid.get(victim.get("UID"))
        if target is None or target["metadata"].get("deletionTimestamp"):
            continue    # gone, or already on its way out
        deleted += _delete(api, target)
    if deleted:
        meta = pod["metadata"]
        log.info("pod %s/%s preempts %d pod(s) on node %s", meta.get("namespace"),
                 meta["name"], deleted, node)
    return deleted


def _delete(api, pod) -> int:
    """Delete a victim (this very pod: its uid is a precondition); 1 if deleted."""
    meta = pod["metadata"]
    try:
        response = api.delete_namespaced_pod(meta["name"], meta.get("namespace", ""),
                                             body={"preconditions": {"uid": meta["uid"]}},
                                             _preload_content=False,
                                             _request_timeout=KUBE_TIMEOUT)
    except ApiException as exc:
        if exc.status in (404, 409):   # gone, or replaced by a pod of the same name
            return 0
        raise
    response.read()
    response.release_conn()
    return 1
