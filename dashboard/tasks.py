"""Celery tasks: bind calls, the expiry reaper, the cache/cluster comparer, history pruning,
the embedded default's scheduler.

The owner decides and assumes; these tasks do the slow part (the Binding POST)
and report back with commands (dashboard.feed.commands):

* 201 Created: `finish_binding` (the assumed pod starts its expiry clock);
* 409 Conflict: the pod is read back. Bound to our node (an earlier try of ours
  went through, e.g. after a read timeout): `finish_binding`. Bound elsewhere, or
  replaced by another pod of the same name: `forget`; we never bind twice.
  Not bound (a write conflict): tried again like a server error;
* 404 Not Found: the pod is gone: `forget`;
* 5xx, 429, connection errors and timeouts: tried again after a short backoff until
  SCHEDVIEW_BIND_ATTEMPTS attempts in all (attempt 1 is the first try, as in
  HiveD's PodBindAttempts), then `forget`;
* any other 4xx cannot succeed on a retry: `forget` at once.

finish_binding and forget are sent without waiting and without a deadline: the
command list in Redis keeps them until an owner serves them, so a busy or failing
owner delays them but cannot lose them, and a bind worker never waits on the owner.

Delivery: bind tasks are acknowledged late (after they ran) and requeued if their
worker process dies, so a crash cannot lose a bind (which would leave the pod
assumed, its binding never finished, forever). Running a bind twice is harmless
by construction: the second POST gets 409 and the read-back above decides.
"""
import logging
import os
import time

import orjson
from celery import shared_task
from django.conf import settings
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from dashboard import health, history_retention, kube, worker_metrics
from dashboard.extender import standin
from dashboard.extender.statuses import bind_info_annotation
from dashboard.feed.commands import send, send_many

log = logging.getLogger(__name__)

FINISH, FORGET, RETRY = "finish", "forget", "retry"


# -- the Kubernetes client, one per worker process ------------------------------------------

_api = {}


def core_api():
    """kube.core_api(), built once per process and cluster setting (it reads the
    kubeconfig and opens a connection pool: far too slow to do for every bind)."""
    key = (os.getpid(), str(settings.SCHEDVIEW_KUBECONFIG), settings.SCHEDVIEW_IN_CLUSTER)
    api = _api.get(key)
    if api is None:
        for old in _api.values():
            old.api_client.rest_client.close()
        _api.clear()
        api = _api[key] = kube.core_api()
    return api


# -- one bind --------------------------------------------------------------------------------

def binding(uid: str, namespace: str, name: str, node: str) -> dict:
    """The Binding kube-scheduler posts: the pod's uid is a precondition on a real server.
    Its bind-info annotation lands on the pod, so the extender's statuses survive a restart."""
    return {"apiVersion": "v1", "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace, "uid": uid,
                         "annotations": bind_info_annotation(node)},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node}}


def bind_once(uid: str, namespace: str, name: str, node: str) -> tuple[str, str]:
    """POST one Binding and read back on a conflict: (FINISH | FORGET | RETRY, reason)."""
    started = time.perf_counter()
    try:
        outcome, reason = _bind_once(uid, namespace, name, node)
    except Exception as e:   # a bug or a broken kubeconfig: retried, then forgotten, never lost
        log.exception("bind %s/%s -> %s failed unexpectedly", namespace, name, node)
        outcome, reason = RETRY, f"binding failed: {type(e).__name__}: {e}"
    worker_metrics.observe_binding(outcome, time.perf_counter() - started)
    return outcome, reason


def _bind_once(uid, namespace, name, node):
    timeout = settings.SCHEDVIEW_BIND_TIMEOUT
    api = core_api()
    try:
        response = api.create_namespaced_pod_binding(
            name, namespace, binding(uid, namespace, name, node),
            _preload_content=False, _request_timeout=timeout)
        response.read()   # a 201 Status (non-2xx raise ApiException); frees the connection
        response.release_conn()
        return FINISH, "bound"
    except ApiException as e:
        status = e.status
        if status == 404:
            return FORGET, "pod not found"
        if status == 409:
            return _conflict(api, uid, namespace, name, node, timeout)
        if status == 429 or (status or 0) >= 500 or not status:
            return RETRY, f"binding answered {status} {e.reason or ''}".rstrip()
        return FORGET, f"binding refused: {status} {_message(e)}"
    except (HTTPError, OSError) as e:
        return RETRY, f"binding failed: {type(e).__name__}: {e}"


def _conflict(api, uid, namespace, name, node, timeout) -> tuple[str, str]:
    """409 on the POST: where is the pod now?"""
    try:
        pod = kube.read_json(api.read_namespaced_pod(name, namespace, _preload_content=False,
                                                     _request_timeout=timeout))
    except ApiException as e:
        if e.status == 404:
            return FORGET, "pod not found"
        return RETRY, f"conflict, then reading the pod answered {e.status}"
    except (HTTPError, OSError, orjson.JSONDecodeError) as e:
        return RETRY, f"conflict, then reading the pod failed: {type(e).__name__}: {e}"
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    if meta.get("uid") and meta["uid"] != uid:
        return FORGET, f"pod replaced (uid {meta['uid']})"
    bound = spec.get("nodeName") or ""
    if bound == node:
        return FINISH, "already bound to this node"
    if bound:
        return FORGET, f"already bound to {bound}"
    if meta.get("deletionTimestamp"):
        return FORGET, "pod is being deleted"
    return RETRY, "binding conflict"


def _message(e: ApiException) -> str:
    try:
        return orjson.loads(e.body).get("message", "")
    except (TypeError, ValueError, AttributeError):
        return e.reason or ""


def backoff(attempt: int) -> float:
    """Seconds before attempt + 1: doubling from SCHEDVIEW_BIND_BACKOFF, at most 2 s."""
    return min(settings.SCHEDVIEW_BIND_BACKOFF * 2 ** (attempt - 1), 2.0)


def finish_command(uid: str, node: str) -> tuple:
    return "finish_binding", {"uid": uid, "node": node, "now": time.time()}


def forget_command(uid: str, node: str, reason: str) -> tuple:
    return "forget", {"uid": uid, "node": node, "reason": reason}


def _settle(uid, namespace, name, node, attempt, outcome, reason):
    """The command that settles one bind, or None after scheduling its next attempt."""
    if outcome == FINISH:
        return finish_command(uid, node)
    if outcome == RETRY:
        if attempt < settings.SCHEDVIEW_BIND_ATTEMPTS:
            log.info("bind %s/%s -> %s, attempt %d: %s; retrying", namespace, name, node,
                     attempt, reason)
            try:
                bind_pod.apply_async((uid, namespace, name, node, attempt + 1),
                                     countdown=backoff(attempt))
                return None
            except Exception as e:
                reason = f"{reason}; could not queue attempt {attempt + 1}: {e}"
        else:
            reason = f"{reason} (after {attempt} attempts)"
    log.warning("bind %s/%s -> %s, attempt %d: forgetting: %s", namespace, name, node,
                attempt, reason)
    return forget_command(uid, node, reason)


@shared_task(name="dashboard.tasks.bind_pod", ignore_result=True, acks_late=True,
             reject_on_worker_lost=True)
def bind_pod(uid: str, namespace: str, name: str, node: str, attempt: int = 1) -> str:
    """Bind one assumed pod and tell the owner; returns "finish" or "forget" (what the
    owner was told), or "retry" (another attempt is queued)."""
    outcome, reason = bind_once(uid, namespace, name, node)
    command = _settle(uid, namespace, name, node, attempt, outcome, reason)
    if command is None:
        return RETRY
    op, args = command
    send(op, args, actor="bind", wait=False, timeout=None)
    return FINISH if op == "finish_binding" else FORGET


@shared_task(name="dashboard.tasks.bind_pods", ignore_result=True, acks_late=True,
             reject_on_worker_lost=True)
def bind_pods(batch: list) -> dict:
    """Bind many assumed pods, [[uid, namespace, name, node], ...], in one task: one
    Celery message and one RPUSH of their commands instead of one of each per pod.
    Failures are retried one by one (bind_pod, attempt 2). Returns outcome counts."""
    commands, counts = [], {FINISH: 0, FORGET: 0, RETRY: 0}
    for uid, namespace, name, node in batch:
        outcome, reason = bind_once(uid, namespace, name, node)
        counts[outcome] += 1
        command = _settle(uid, namespace, name, node, 1, outcome, reason)
        if command is not None:
            commands.append(command)
    send_many(commands, actor="bind", wait=False, timeout=None)
    return counts


# -- periodic --------------------------------------------------------------------------------

@shared_task(name="dashboard.tasks.reap", ignore_result=True)
def reap() -> str:
    """Ask the owner to expire assumed pods whose binding finished more than TTL ago.
    The command dies with the period: a queue of reaps never piles up for the owner."""
    return send("reap", {"now": time.time()}, actor="reaper", wait=False,
                timeout=settings.SCHEDVIEW_REAP_PERIOD)


@shared_task(name="dashboard.tasks.compare", ignore_result=True)
def compare() -> str:
    """Ask the owner to compare its cache with the cluster (it logs and counts differences)."""
    return send("compare", {}, actor="comparer", wait=False,
                timeout=settings.SCHEDVIEW_COMPARE_PERIOD)


@shared_task(name="dashboard.tasks.prune_history", ignore_result=True)
def prune_history() -> dict:
    """Keep the history to its configured size (history_retention); runs on any worker."""
    return history_retention.prune(settings.SCHEDVIEW_HISTORY_KEEP,
                                   health_kept=settings.SCHEDVIEW_SAMPLE_KEEP)


@shared_task(name="dashboard.tasks.sample_health", ignore_result=True)
def sample_health() -> str:
    """Record the health and count figures (the overview's charts). Sampled here, not in
    the owner: a sample is taken whether or not an owner leads (a dead owner is a sample
    saying so), the owner's one thread keeps serving kube-scheduler, and the rates come
    from the history the owner already writes."""
    return health.take_sample().level


@shared_task(name="dashboard.tasks.schedule_pending", ignore_result=True)
def schedule_pending(limit: int = 20) -> dict:
    """The embedded default's kube-scheduler (extender/standin.py): up to `limit` pending
    pods, oldest first, through the owner's extender (filter, then bind or preempt), so
    the full algorithm decides and the statuses page shows it. Returns the outcomes."""
    return standin.schedule(core_api(), standin.door(), limit)
