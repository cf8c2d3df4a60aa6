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

import orjson
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from dashboard import binding_metrics, kube
from dashboard.extender.statuses import bind_info_annotation

log = logging.getLogger(__name__)

FINISH, FORGET, RETRY = "finish", "forget", "retry"

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
        return FORGET, f"binding refused: {status} {_message(e)}".rstrip()
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
