"""One Binding POST and what its answer means, for whoever binds: the extender's listener
(kube-scheduler waits for the answer) and Celery's bind tasks (nobody waits).

* 201 Created: FINISH (the assumed pod starts its expiry clock);
* 409 Conflict: the pod is read back. Bound to our node (an earlier try of ours went
  through, e.g. after a read timeout, or a redelivered task): FINISH. Bound elsewhere,
  replaced by another pod of the same name, or being deleted: FORGET; we never bind twice.
  Not bound (a write conflict): RETRY;
* 404 Not Found: the pod is gone: FORGET;
* 5xx, 429, connection errors and timeouts: RETRY;
* any other 4xx (403 from an admission policy, 400, 422) cannot succeed on a retry: FORGET.

The API server's answers are the captures' (shared k8s-wire 43-binding-create-201,
44-binding-again-409, 45-binding-missing-pod-404).
"""
import logging
import os
import time
from http import HTTPStatus

import orjson
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings

from dashboard.kube import binding_metrics, client as kube
from dashboard.kube.kube_http import KubeHttp, Unreachable, pod_path, status_message
from dashboard.wire.extender import bind_info_annotation

log = logging.getLogger(__name__)

FINISH, FORGET, RETRY = "finish", "forget", "retry"

_http = {}


def api_http() -> KubeHttp:
    """This process's connection to the configured cluster (reading the kubeconfig is far
    too slow to do for every bind); a new one after a fork or a settings change."""
    key = (os.getpid(), str(settings.SCHEDVIEW_KUBECONFIG), settings.SCHEDVIEW_IN_CLUSTER)
    http = _http.get(key)
    if http is None:
        _http.clear()
        http = _http[key] = KubeHttp(kube.api_client().configuration)
    return http


def binding(uid: str, namespace: str, name: str, node: str) -> dict:
    """The Binding kube-scheduler posts: the pod's uid is a precondition on a real server.
    Its bind-info annotation lands on the pod, so the extender's statuses survive a restart."""
    return {"apiVersion": "v1", "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace, "uid": uid,
                         "annotations": bind_info_annotation(node)},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node}}


def bind_once(uid: str, namespace: str, name: str, node: str,
              timeout: float = None) -> tuple[str, str]:
    """POST one Binding and read back on a conflict: (FINISH | FORGET | RETRY, reason)."""
    started = time.perf_counter()
    try:
        outcome, reason = _bind_once(uid, namespace, name, node,
                                     settings.SCHEDVIEW_BIND_TIMEOUT if timeout is None
                                     else timeout)
    except SoftTimeLimitExceeded:
        raise                # a bind task's time is up: the task retries the pod
    except Exception as e:   # a bug or a broken kubeconfig: retried, then forgotten, never lost
        log.exception("bind %s/%s -> %s failed unexpectedly", namespace, name, node)
        outcome, reason = RETRY, f"binding failed: {type(e).__name__}: {e}"
    binding_metrics.observe(outcome, time.perf_counter() - started)
    return outcome, reason


def _bind_once(uid, namespace, name, node, timeout):
    http = api_http()
    body = orjson.dumps(binding(uid, namespace, name, node))
    try:
        status, answer = http.request("POST", pod_path(namespace, name, "binding"), body,
                                      timeout=timeout)
    except Unreachable as e:
        return RETRY, f"binding failed: {e}"
    if 200 <= status < 300:
        return FINISH, "bound"
    if status == 404:
        return FORGET, "pod not found"
    if status == 409:
        return _conflict(http, uid, namespace, name, node, timeout)
    if status == 429 or status >= 500:
        return RETRY, _answered(status, answer)
    return FORGET, f"binding refused: {status} {status_message(answer)}".rstrip()


def _conflict(http, uid, namespace, name, node, timeout) -> tuple[str, str]:
    """409 on the POST: where is the pod now?"""
    try:
        status, answer = http.request("GET", pod_path(namespace, name), timeout=timeout)
    except Unreachable as e:
        return RETRY, f"conflict, then reading the pod failed: {e}"
    if status == 404:
        return FORGET, "pod not found"
    if status != 200:
        return RETRY, f"conflict, then reading the pod answered {status}"
    try:
        pod = orjson.loads(answer)
    except orjson.JSONDecodeError as e:
        return RETRY, f"conflict, then reading the pod failed: JSONDecodeError: {e}"
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


def _answered(status: int, answer) -> str:
    """"binding answered 503 Service Unavailable: <the Status's message>": what the API
    server said, kept on the pod's timeline when the pod is forgotten."""
    said = f"binding answered {status} {_reason(status)}".rstrip()
    message = status_message(answer)
    return f"{said}: {message}" if message else said


def _reason(status: int) -> str:
    """The status's reason phrase, so a message reads "503 Service Unavailable"."""
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""
