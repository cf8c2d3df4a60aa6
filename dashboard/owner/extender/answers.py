"""How kube-scheduler's call on the owner's listener is answered.

- a user error (malformed body, unknown pod: the owner refused with 400, 404 or
  409) is a 400 with {"Error": message}, logged with the verb, the pod the body names
  and why: kube-scheduler logs a refused call only at -v=4 and a refused preempt
  leaves the pod unschedulable until the next cluster event, so ours is where an
  operator finds out;
- a platform error (a busy owner, the owner failing) is logged and, for filter and
  bind, reported inside the result body with HTTP 200, since that is where
  kube-scheduler reads it; preempt answers 500 (shared k8s-wire/extender 04b: a
  failed preempt leaves the pod Unschedulable, retried on the next cluster event);
- a bind posts its Binding here, in the listener's thread, between two calls to the
  owner (the plan, then the outcome), so the owner's thread never waits on the API
  server, and is answered only once the API server has answered.
"""
import logging
from typing import Callable

import orjson

from dashboard.kube.binding import FINISH
from dashboard.wire.commands import CommandError

log = logging.getLogger(__name__)

# kube-scheduler's verbs (the last part of the path) -> the owner's ops.
VERB_OPS = {"filter": "extender_filter", "bind": "extender_bind",
            "preempt": "extender_preempt"}

USER_ERRORS = (400, 404, 409)
_FAILED_FILTER = {"Nodes": None, "NodeNames": None, "FailedNodes": {},
                  "FailedAndUnresolvableNodes": {}}
# What a platform error is answered with (in "Error", status 200); None: a 500.
_FAILED_RESULTS = {"extender_filter": _FAILED_FILTER, "extender_bind": {},
                   "extender_preempt": None}


def answer(op: str, raw: bytes, call: Callable[[str, dict], object],
           post_binding: Callable[[str, str, str, str], tuple],
           decode: Callable[[bytes], object] = orjson.loads) -> tuple[int, dict]:
    """(HTTP status, JSON body) for kube-scheduler's request body `raw`, decoded by
    `decode`, which `call(op, body)` hands to the owner (raising CommandError when it
    refuses or fails); `post_binding(uid, namespace, name, node)` -> (outcome, reason):
    dashboard.kube.binding's bind_once."""
    try:
        body = decode(raw)
    except orjson.JSONDecodeError as exc:
        return _refused(op, None, f"the body is not JSON: {exc}")
    if not isinstance(body, dict):
        return _refused(op, None, "the body must be a JSON object")
    try:
        result = call(op, body)
        if op == "extender_bind":
            result = _bind(result, call, post_binding)
        return 200, result
    except CommandError as exc:
        if exc.status in USER_ERRORS:
            return _refused(op, body, exc.message)
        log.error("extender %s failed: %s", op, exc)
        failed = _FAILED_RESULTS[op]
        if failed is None:
            return 500, {"Error": exc.message}
        return 200, dict(failed, Error=exc.message)


def _refused(op: str, body, why: str) -> tuple[int, dict]:
    log.warning("extender %s refused (pod %s): %s", op.removeprefix("extender_"),
                _pod_named(body), why)
    return 400, {"Error": why}


def _pod_named(body) -> str:
    """namespace/name (uid) of the pod a request body names, as far as it names one."""
    pod = body.get("Pod") if isinstance(body, dict) else None
    meta = pod.get("metadata") if isinstance(pod, dict) else None
    if isinstance(meta, dict):
        ids = meta.get("namespace"), meta.get("name"), meta.get("uid")
    elif isinstance(body, dict):
        ids = body.get("PodNamespace"), body.get("PodName"), body.get("PodUID")
    else:
        ids = None, None, None
    namespace, name, uid = (i if isinstance(i, str) else "?" for i in ids)
    return f"{namespace}/{name} ({uid})"


def _bind(plan, call, post_binding) -> dict:
    """The bind's answer: at once, or after its Binding was posted and settled."""
    if plan.pod is None:
        return plan.answer
    uid, namespace, name, node = plan.pod
    outcome, reason = post_binding(uid, namespace, name, node)
    return call("extender_bind_outcome", {"uid": uid, "node": node,
                                          "bound": outcome == FINISH, "reason": reason})
