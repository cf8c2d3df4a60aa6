"""Celery tasks: bind calls, the expiry reaper, the cache/cluster comparer, history pruning,
vacuuming, the embedded default's scheduler.

The owner decides and assumes; these tasks do the binds nobody waits for (an
operator's or a tool's assume, the extender binding a pod itself): the Binding POST
(dashboard.kube.binding) and its report back to the owner (dashboard.clients.owner_client):
FINISH is `finish_binding` (the assumed pod starts its expiry clock), FORGET is
`forget`, RETRY is Celery's retry of the task after a backoff, until
SCHEDVIEW_BIND_ATTEMPTS attempts in all (attempt 1 is the first try, as in HiveD's
PodBindAttempts), then `forget` with the last failure as its cause.

finish_binding and forget are sent without waiting and without a deadline: the
command list in Redis keeps them until an owner serves them, so a busy or failing
owner delays them but cannot lose them, and a bind worker never waits on the owner.

Delivery: bind tasks are acknowledged late (after they ran) and requeued if their
worker process dies, or handed out again SCHEDVIEW_BIND_REDELIVERY seconds after a
whole worker died holding them (settings), so a crash cannot lose a bind (which
would leave the pod assumed, its binding never finished). A bind task stops within
that time (BIND_TIME_LIMIT), so it never runs while its message is handed out again;
pods a batch had no time for are retried. Running a bind twice is still harmless: the
second POST gets 409 and the read-back (dashboard.kube.binding) decides.

Fencing: a bind carries the lease term of the owner that assumed its pods (the owner's
extender binds and the web's, from the assume's reply). A term that is no longer the
database's belongs to an owner that lost its lease (frozen, then woken): the new leader
never held those assumptions, so the bind is refused before its POST and nobody is told
(a forget would reach the new leader, which may have assumed the pod itself).
"""
import logging

from celery.exceptions import Reject, SoftTimeLimitExceeded
from celery.utils.time import get_exponential_backoff_interval
from django.conf import settings
from django.db import DatabaseError

# The app itself, not shared_task: a task sent from a process that never imported the app
# (a test, a shell) must still go to its broker, not to Celery's unconfigured default.
from dashboard.celery import app
from dashboard.clients import owner_client
from dashboard.clients.owner_client import finish_command, forget_command, settle_binds
from dashboard.kube.binding import FINISH, FORGET, RETRY, bind_once
from dashboard.models import LeaseTerm
from dashboard.readmodel import health
from dashboard.wire.tasks import BIND_POD, BIND_PODS
from dashboard.worker import history_retention, worker_probes  # noqa: F401  (its signals serve the probes)
from dashboard.worker import vacuum as worker_vacuum

log = logging.getLogger(__name__)

# Seconds a bind task may run: it is told to stop (SoftTimeLimitExceeded) at the first,
# killed at the second, both before its message could be handed out again.
BIND_TIME_LIMIT = (settings.SCHEDVIEW_BIND_REDELIVERY * 0.6,
                   settings.SCHEDVIEW_BIND_REDELIVERY * 0.8)
BACKOFF_MAX = 2.0        # seconds: the longest pause between two attempts
OUT_OF_TIME = "the bind task ran out of time"
STALE = "stale"          # the outcome of a bind refused for its stale lease term

BIND_TASK = dict(bind=True, ignore_result=True, acks_late=True, reject_on_worker_lost=True,
                 soft_time_limit=BIND_TIME_LIMIT[0], time_limit=BIND_TIME_LIMIT[1])


class BindFailed(Exception):
    """A Binding that may succeed on another attempt: the cause of the task's retry."""


def retry_or_give_up(task, cause: str, **retry_options) -> str:
    """Celery's retry of `task` after its backoff: raises celery's Retry once the next
    attempt is queued. When there is none (the attempts are spent, or the broker would
    not take it), returns why, to add to the pods' forget reason.

    The countdown is Celery's exponential backoff from SCHEDVIEW_BIND_BACKOFF, doubling,
    at most BACKOFF_MAX: the task option `retry_backoff` counts whole seconds, too slow
    for a bind kube-scheduler's pod waits on."""
    attempt = task.request.retries + 1
    countdown = get_exponential_backoff_interval(
        factor=settings.SCHEDVIEW_BIND_BACKOFF, retries=task.request.retries,
        maximum=BACKOFF_MAX)
    try:
        raise task.retry(exc=BindFailed(cause), countdown=countdown,
                         max_retries=settings.SCHEDVIEW_BIND_ATTEMPTS - 1, **retry_options)
    except BindFailed:            # what Celery raises when no retry is left
        return f" (after {attempt} attempts)"
    except Reject as e:           # the retry could not be queued
        return f"; could not queue attempt {attempt + 1}: {e.reason}"


def fenced_out(task, term: int | None, pods: list) -> str | None:
    """None when `pods`' binds may be posted; else what became of them: STALE (refused)
    or FORGET. `term` None: assumed by an owner without a lease (one owner alone),
    nothing to check. A database that cannot tell the term now is Celery's retry of the
    task; with none left, the pods are forgotten."""
    if term is None:
        return None
    try:
        current = LeaseTerm.current()
    except DatabaseError as error:
        cause = f"cannot read the lease's term: {error}"
        cause += retry_or_give_up(task, cause)
        settle_binds([_forget(pod[0], pod[3], cause) for pod in pods])
        return FORGET
    if current == term:
        return None
    log.warning("refused %d bind(s) of lease term %d: the term is %d now (another owner "
                "took the lease; it holds none of their assumptions)", len(pods), term,
                current)
    return STALE


def _forget(uid: str, node: str, reason: str) -> tuple:
    log.warning("bind %s -> %s: forgetting: %s", uid, node, reason)
    return forget_command(uid, node, reason)


@app.task(name=BIND_POD, **BIND_TASK)
def bind_pod(self, uid: str, namespace: str, name: str, node: str,
             term: int | None = None) -> str:
    """Bind one assumed pod, assumed under lease `term`, and tell the owner; returns
    "finish" or "forget" (what the owner was told), or "stale" (nothing posted, nobody
    told). A bind to try again is Celery's retry of this task."""
    refused = fenced_out(self, term, [[uid, namespace, name, node]])
    if refused:
        return refused
    try:
        outcome, reason = bind_once(uid, namespace, name, node)
    except SoftTimeLimitExceeded:
        outcome, reason = RETRY, OUT_OF_TIME
    if outcome == FINISH:
        command = finish_command(uid, node)
    else:
        if outcome == RETRY:
            log.info("bind %s/%s -> %s, attempt %d: %s", namespace, name, node,
                     self.request.retries + 1, reason)
            reason += retry_or_give_up(self, reason)
        command = _forget(uid, node, reason)
    settle_binds([command])
    return FINISH if command[0] == "finish_binding" else FORGET


@app.task(name=BIND_PODS, **BIND_TASK)
def bind_pods(self, batch: list, term: int | None = None) -> dict:
    """Bind many assumed pods, [[uid, namespace, name, node], ...], assumed under lease
    `term`, in one task: one Celery message and one RPUSH of their commands instead of
    one of each per pod. The pods to try again (failures, and those left when the task's
    time ran out) are Celery's retry of this task with them alone. Returns outcome counts
    (one outcome for them all when fenced_out refused them)."""
    refused = fenced_out(self, term, batch)
    if refused:
        return {refused: len(batch)}
    commands, again = [], []          # again: (pod, why it failed)
    counts = {FINISH: 0, FORGET: 0, RETRY: 0}
    tried = 0     # counted last: a pod the time limit cut short is tried again, never lost
    try:
        for pod in batch:
            outcome, reason = bind_once(*pod)
            if outcome == FINISH:
                commands.append(finish_command(pod[0], pod[3]))
            elif outcome == FORGET:
                commands.append(_forget(pod[0], pod[3], reason))
            else:
                again.append((pod, reason))
            counts[outcome] += 1
            tried += 1
    except SoftTimeLimitExceeded:
        again += [(pod, OUT_OF_TIME) for pod in batch[tried:]]
        counts[RETRY] += len(batch) - tried
    # Settled pods are told first: the retry raised below ends the task.
    settle_binds(commands)
    if again:
        log.info("bind_pods, attempt %d: %d of %d pod(s) to try again",
                 self.request.retries + 1, len(again), len(batch))
        why = retry_or_give_up(self, f"{len(again)} pod(s), first: {again[0][1]}",
                               args=([pod for pod, _ in again],))
        settle_binds([_forget(pod[0], pod[3], reason + why) for pod, reason in again])
    return counts


# -- periodic --------------------------------------------------------------------------------

@app.task(name="worker.tasks.reap", ignore_result=True)
def reap() -> str:
    """Ask the owner to expire assumed pods whose binding finished more than TTL ago.
    The command dies with the period: a queue of reaps never piles up for the owner."""
    return owner_client.reap(period=settings.SCHEDVIEW_REAP_PERIOD)


@app.task(name="worker.tasks.compare", ignore_result=True)
def compare() -> str:
    """Ask the owner to compare its cache with the cluster (it logs and counts differences)."""
    return owner_client.compare(period=settings.SCHEDVIEW_COMPARE_PERIOD)


@app.task(name="worker.tasks.prune_history", ignore_result=True)
def prune_history() -> dict:
    """Keep the history to its configured size (history_retention); runs on any worker."""
    return history_retention.prune(settings.SCHEDVIEW_HISTORY_KEEP,
                                   health_kept=settings.SCHEDVIEW_SAMPLE_KEEP)


@app.task(name="worker.tasks.vacuum", ignore_result=True)
def vacuum() -> list:
    """VACUUM the tables the owner rewrites where autovacuum does not (worker.vacuum)."""
    return worker_vacuum.vacuum_uncovered()


@app.task(name="worker.tasks.sample_health", ignore_result=True)
def sample_health() -> str:
    """Record the health and count figures (the overview's charts). Sampled here, not in
    the owner: a sample is taken whether or not an owner leads (a dead owner is a sample
    saying so), the owner's one thread keeps serving kube-scheduler, and the rates come
    from the history the owner already writes."""
    return health.take_sample().level
