"""Everything the web and the Celery workers may ask of the cache owner, and the only
module of theirs that asks it.

Each ask is a command over Redis (dashboard.wire.commands on dashboard.wire.requests). A waiting ask
returns the owner's result or raises CommandError (400, 404, 409, 500), and
OwnerUnavailable (503) when no reply came in time, naming why (`unanswered`).
Commands nobody waits for return their ids; finish_binding and forget are sent
without a deadline, so the list in Redis keeps them until an owner serves them: a
busy or failing owner delays them but cannot lose them, and a bind worker never
waits on the owner.

These are blocking calls: from async code, wrap them in asgiref's sync_to_async.
"""
import time

import redis
from django.conf import settings

from dashboard.wire.clients import redis_client
from dashboard.wire.commands import Command, CommandError, OwnerUnavailable, answer, malformed
from dashboard.wire.keys import OWNER_COMMANDS, OWNER_REPLY_PREFIX, OWNER_STATUS
from dashboard.wire.requests import MalformedMessage, NoReply, RequestClient

TIMEOUT = 5.0   # seconds the owner has to answer a waiting ask


# -- state changes -------------------------------------------------------------------------

def assume(namespace: str, name: str, node: str, *, force: bool, actor: str,
           timeout: float = TIMEOUT) -> dict:
    """Assume the pending pod on `node` (refused with 409 when it does not fit, unless
    `force`): {"uid", "node", "forced_past", "before", "after"}."""
    return send("assume", {"namespace": namespace, "name": name, "node": node,
                           "force": force}, actor=actor, timeout=timeout)


def forget(uid: str, reason: str, *, actor: str, timeout: float = TIMEOUT) -> dict:
    """Drop an assumed pod from the cache now (an operator says so)."""
    return send("forget", {"uid": uid, "reason": reason}, actor=actor, timeout=timeout)


def expire(uid: str, *, actor: str, timeout: float = TIMEOUT) -> dict:
    """Expire an assumed pod now, as the reaper would once its TTL has passed."""
    return send("expire", {"uid": uid}, actor=actor, timeout=timeout)


def finish_command(uid: str, node: str) -> tuple:
    """The pod's binding succeeded: its assumption starts its expiry clock."""
    return "finish_binding", {"uid": uid, "node": node, "now": time.time()}


def forget_command(uid: str, node: str, reason: str) -> tuple:
    """The pod's binding failed for good (or was never queued): undo its assumption."""
    return "forget", {"uid": uid, "node": node, "reason": reason}


def settle_binds(commands: list, *, actor: str = "bind") -> list:
    """Send finish_command/forget_command commands in one RPUSH, without waiting or a
    deadline; returns their ids."""
    return send_many(commands, actor=actor, wait=False, timeout=None)


def reap(*, period: float) -> str:
    """Ask the owner to expire assumed pods whose binding finished more than TTL ago. The
    command dies with the `period`: a queue of reaps never piles up for the owner."""
    return send("reap", {"now": time.time()}, actor="reaper", wait=False, timeout=period)


def compare(*, period: float) -> str:
    """Ask the owner to compare its cache with the cluster, within `period` or never."""
    return send("compare", {}, actor="comparer", wait=False, timeout=period)


# -- reads of the owner's memory -------------------------------------------------------------

def get_pod(uid: str, *, timeout: float = TIMEOUT) -> dict:
    """The pod as the cache holds it ({"pod": ...}); 404 when it neither holds nor tracks it."""
    return send("get_pod", {"uid": uid}, timeout=timeout)


def get_node(name: str, *, timeout: float = TIMEOUT) -> dict:
    """The node as the cache holds it ({"images": [[image, bytes, nodes], ...], ...})."""
    return send("get_node", {"name": name}, timeout=timeout)


def diagnose(uid: str, *, nodes: bool = True, timeout: float = TIMEOUT) -> dict:
    """Why the pending pod is not running (scheduling.diagnosis, with `computed_at_seq`),
    without each node's verdict unless `nodes` (thousands of them in a large cluster);
    404 for a pod the owner neither holds nor tracks, 409 for one that is not pending."""
    return send("diagnose", {"uid": uid, "nodes": nodes}, timeout=timeout)


def pending_pods(args: dict, *, timeout: float = TIMEOUT) -> dict:
    """A page of the pending pods in kube-scheduler's queue order with their first reasons
    and counts (dashboard/owner/pending_queue.py): args reason, namespace, offset, limit."""
    return send("pending_pods", args, timeout=timeout)


def dump_cache(part: str, after: str, limit: int, *, timeout: float = TIMEOUT) -> dict:
    """A page of the cache's dump (`part` nodes or pending, those after the cursor `after`):
    {"seq", "generation", "counts", "comparer", "part", "items", "next"}; `next` is the
    cursor of the page after, None on the last."""
    return send("dump_cache", {"part": part, "after": after, "limit": limit}, timeout=timeout)


def extender_statuses(args: dict, *, timeout: float = TIMEOUT) -> dict:
    """A page of the extender's pod schedule statuses: args limit, offset, state."""
    return send("extender_statuses", args, timeout=timeout)


def extender_status(namespace: str, name: str, *, timeout: float = TIMEOUT) -> dict:
    """One pod's full schedule status; 404 for a pod the extender does not track."""
    return send("extender_status", {"namespace": namespace, "name": name}, timeout=timeout)


# -- the channel -----------------------------------------------------------------------------

def send(op: str, args: dict | None = None, *, actor: str = "system",
         timeout: float | None = TIMEOUT, wait: bool = True, client=None):
    """Queue a command for the owner; when `wait`, return its result or raise CommandError.

    The command must run within `timeout` seconds or never. Without `wait` the
    owner sends no reply and this returns the command's id; `timeout=None` (only
    without `wait`) queues it with no deadline, so it survives an owner failover.
    Raises OwnerUnavailable (503) when no reply comes in time or Redis is down.
    """
    if not wait:
        return send_many([(op, args)], actor=actor, timeout=timeout, wait=False,
                         client=client)[0]
    requests = _requests(client)
    try:
        reply = requests.ask(OWNER_COMMANDS, Command(op, args or {}, actor).body(), timeout)
    except redis.RedisError as error:
        raise unanswered(requests.client, op, timeout, error) from error
    except NoReply:
        raise unanswered(requests.client, op, timeout) from None
    except MalformedMessage as error:
        raise malformed(error) from None
    return answer(reply)


def send_many(commands: list, *, actor: str = "system", timeout: float | None = TIMEOUT,
              wait: bool = True, client=None) -> list:
    """Queue several (op, args) commands in one RPUSH; the owner serves them in order.

    When `wait`, returns one entry per command: its result, or the CommandError
    it raised (not raised: the others may have succeeded). Otherwise returns the ids.
    """
    requests = _requests(client)
    bodies = [Command(op, args or {}, actor).body() for op, args in commands]
    try:
        if not wait:
            return requests.tell(OWNER_COMMANDS, bodies, timeout)
        replies = requests.ask_many(OWNER_COMMANDS, bodies, timeout)
    except redis.RedisError as error:
        raise unanswered(requests.client, commands[0][0], timeout, error) from error
    return [_outcome(requests.client, op, timeout, reply)
            for (op, _), reply in zip(commands, replies)]


def _outcome(client, op, timeout, reply):
    if isinstance(reply, NoReply):
        return unanswered(client, op, timeout)
    if isinstance(reply, MalformedMessage):
        return malformed(reply)
    try:
        return answer(reply)
    except CommandError as error:
        return error


def _requests(client) -> RequestClient:
    return RequestClient(client or redis_client(settings.REDIS_URL), OWNER_REPLY_PREFIX)


def unanswered(client, op: str, timeout: float, error: Exception = None) -> OwnerUnavailable:
    """Why a command got no reply, naming the cause rather than the symptom: Redis down
    (it does not answer a PING either), no owner leading (none publishes its status),
    or a leading owner too busy to answer in time."""
    try:
        client.ping()
        leading = client.exists(OWNER_STATUS)
    except redis.RedisError as down:
        return OwnerUnavailable(f"cannot reach Redis: {down}")
    if error is not None:
        return OwnerUnavailable(f"Redis failed on {op!r}: {error}")
    return OwnerUnavailable(
        f"the cache owner did not answer {op!r} within {timeout:g}s: "
        + ("it leads, but is busy" if leading
           else "no cache owner is leading (is `manage.py watch` running?)"))
