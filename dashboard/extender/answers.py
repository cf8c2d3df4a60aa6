"""How an extender HTTP call is answered, whichever door it came in by.

Two doors lead to the owner's extender: the web's views (the body travels to the
owner as a Redis command) and the owner's own listener (an in-process call). Both
answer kube-scheduler by the same rules, kept here so they cannot drift apart:

- a user error (malformed body, unknown pod: the owner refused with 400, 404 or
  409) is a 400 with {"Error": message};
- a platform error (no owner, a busy owner, the owner failing) is logged and, for
  filter and bind, reported inside the result body with HTTP 200, since that is
  where kube-scheduler reads it; preempt answers 500.
"""
import logging
from typing import Callable

import orjson

from dashboard.feed.commands import CommandError

log = logging.getLogger(__name__)

ACTOR = "kube-scheduler"
# kube-scheduler's verbs (the last part of the path) -> the owner's ops.
VERB_OPS = {"filter": "extender_filter", "bind": "extender_bind",
            "preempt": "extender_preempt"}

USER_ERRORS = (400, 404, 409)
_FAILED_FILTER = {"Nodes": None, "NodeNames": None, "FailedNodes": {},
                  "FailedAndUnresolvableNodes": {}}
# What a platform error is answered with (in "Error", status 200); None: a 500.
_FAILED_RESULTS = {"extender_filter": _FAILED_FILTER, "extender_bind": {},
                   "extender_preempt": None}


def answer(op: str, raw: bytes, call: Callable[[str, dict], dict]) -> tuple[int, dict]:
    """(HTTP status, JSON body) for kube-scheduler's request body `raw`, which
    `call(op, body)` hands to the owner (raising CommandError when it refuses or fails)."""
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return 400, {"Error": f"the body is not JSON: {exc}"}
    if not isinstance(body, dict):
        return 400, {"Error": "the body must be a JSON object"}
    try:
        return 200, call(op, body)
    except CommandError as exc:
        if exc.status in USER_ERRORS:
            return 400, {"Error": exc.message}
        log.error("extender %s failed: %s", op, exc)
        failed = _FAILED_RESULTS[op]
        if failed is None:
            return 500, {"Error": exc.message}
        return 200, dict(failed, Error=exc.message)
