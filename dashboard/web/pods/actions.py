"""The state changes people and tools ask for, audited: the pages and the REST API call these.

Each action asks the cache owner through dashboard.clients.owner_client (the one module by
which the web and the workers reach the owner), queues what follows (the bind), and
writes one AuditAction row, refused actions too (ok=False with the owner's message).
A refusal raises CommandError with the owner's status (400, 404, 409; 503 when no
owner answered) after it is audited.

These are blocking calls (Redis, the database): from async code, wrap them in
asgiref's sync_to_async.
"""
import logging

from dashboard.celery import app as celery_app
from dashboard.clients import owner_client
from dashboard.clients.owner_client import TIMEOUT
from dashboard.wire.commands import CommandError
from dashboard.wire.tasks import BIND_POD

log = logging.getLogger(__name__)
REASON_MAX = 500    # characters of an operator's reason the audit keeps


def schedule_pod(namespace: str, name: str, node: str, actor: str, *, force: bool = False,
                 reason: str = "", via: str = "", timeout: float = TIMEOUT) -> dict:
    """Assume the pending pod on `node` in the owner's cache, then queue its bind.

    The owner refuses (409, with the reason) a pod that does not fit on the node by the
    scheduling algorithm's filters, unless `force`: the audit then says what was forced.
    Returns the owner's result ({"uid", "node", "forced_past", "before", "after"}: the
    node's aggregates before and after; "term": the lease term of the assumption, which
    its bind carries) plus "task_id", the bind task's id.
    """
    args = {"namespace": namespace, "name": name, "node": node, "force": force,
            **_asked(reason, via)}
    try:
        result = owner_client.assume(namespace, name, node, force=force, actor=actor,
                                     timeout=timeout)
    except CommandError as e:
        _audit(actor, "schedule", f"{namespace}/{name}", node, e, {**args, "status": e.status})
        raise
    uid = result["uid"]
    try:
        task = celery_app.send_task(BIND_POD, args=(uid, namespace, name, node),
                                    kwargs={"term": result.get("term")})
    except Exception as e:
        error = _unqueued(uid, node, e, actor)
        _audit(actor, "schedule", uid, node, error, {**args, "status": error.status})
        raise error from e
    _audit(actor, "schedule", uid, node, None, {**args, "task_id": task.id,
                                                 "forced_past": result.get("forced_past"),
                                                 "before": result.get("before"),
                                                 "after": result.get("after")})
    return {**result, "task_id": task.id}


def forget_pod(uid: str, actor: str, reason: str = "", *, via: str = "",
               timeout: float = TIMEOUT) -> dict:
    """Drop an assumed pod from the owner's cache (its bind failed, or an operator says
    so); the reason is the cause on the pod's timeline."""
    cause = reason or f"forgotten by {actor}"
    return _audited("forget", uid, actor, {"uid": uid, **_asked(cause, via)},
                    lambda: owner_client.forget(uid, cause, actor=actor, timeout=timeout))


def expire_pod(uid: str, actor: str, *, reason: str = "", via: str = "",
               timeout: float = TIMEOUT) -> dict:
    """Expire an assumed pod now, as the reaper would once its TTL has passed."""
    return _audited("expire", uid, actor, {"uid": uid, **_asked(reason, via)},
                    lambda: owner_client.expire(uid, actor=actor, timeout=timeout))


def _asked(reason: str, via: str) -> dict:
    """What the audit keeps of how an action was asked for: the reason given and the door
    it came through (page, API token, API session)."""
    return {"reason": reason[:REASON_MAX], "via": via}


def _audited(op: str, uid: str, actor: str, args: dict, ask) -> dict:
    """ask()'s result, audited with `args`, or its CommandError, audited and raised."""
    try:
        result = ask()
    except CommandError as e:
        _audit(actor, op, uid, "", e, {**args, "status": e.status})
        raise
    node = (result or {}).get("node", "") if isinstance(result, dict) else ""
    _audit(actor, op, uid, node or "", None, {**args, "result": result})
    return result


def _unqueued(uid: str, node: str, error: Exception, actor: str) -> CommandError:
    """The bind could not be queued: undo the assumption, so the pod is not stuck assumed."""
    log.error("could not queue the bind of %s on %s: %s; forgetting it", uid, node, error)
    try:
        owner_client.settle_binds([owner_client.forget_command(
            uid, node, f"could not queue the bind: {error}")], actor=actor)
    except CommandError:
        log.exception("could not forget %s either", uid)
    return CommandError(503, f"assumed, but the bind could not be queued: {error}")


# -- audit -------------------------------------------------------------------------------------

def _record(actor, action, target, node, error, details):
    from dashboard.models import AuditAction

    return AuditAction(actor=actor[:150], action=action, target=target[:253], node=node[:253],
                       ok=error is None, message="" if error is None else _text(error),
                       details=details)


def _text(error) -> str:
    return error.message if isinstance(error, CommandError) else str(error)


def _audit(actor, action, target, node, error, details):
    _save([_record(actor, action, target, node, error, details)])


def _save(records):
    """Write audit rows. The change already happened in the owner: a failing database
    is logged, not raised, so the caller still learns the outcome of its action."""
    if not records:
        return
    from dashboard.models import AuditAction

    try:
        AuditAction.objects.bulk_create(records)
    except Exception:
        log.exception("could not write %d audit record(s): %s", len(records),
                      [(r.action, r.target, r.ok) for r in records])
