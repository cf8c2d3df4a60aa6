"""Celery tasks: bind calls, the expiry reaper, the cache/cluster comparer, history pruning,
the embedded default's scheduler.

The owner decides and assumes; these tasks do the binds nobody waits for (an
operator's or a tool's assume, the extender binding a pod itself): the Binding POST
(dashboard.binding) and its report back to the owner (dashboard.owner_client):
FINISH is `finish_binding` (the assumed pod starts its expiry clock), FORGET is
`forget`, RETRY is tried again after a short backoff until SCHEDVIEW_BIND_ATTEMPTS
attempts in all (attempt 1 is the first try, as in HiveD's PodBindAttempts), then
`forget`.

finish_binding and forget are sent without waiting and without a deadline: the
command list in Redis keeps them until an owner serves them, so a busy or failing
owner delays them but cannot lose them, and a bind worker never waits on the owner.

Delivery: bind tasks are acknowledged late (after they ran) and requeued if their
worker process dies, or handed out again SCHEDVIEW_BIND_REDELIVERY seconds after a
whole worker died holding them (settings), so a crash cannot lose a bind (which
would leave the pod assumed, its binding never finished). A bind task stops within
that time (BIND_TIME_LIMIT), so it never runs while its message is handed out again;
pods a batch had no time for are retried one by one. Running a bind twice is still
harmless: the second POST gets 409 and the read-back (dashboard.binding) decides.
"""
import logging

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings

from dashboard import health, history_retention, kube, owner_client
from dashboard.binding import FINISH, FORGET, RETRY, bind_once
from dashboard.extender import standin
from dashboard.owner_client import finish_command, forget_command, settle_binds

log = logging.getLogger(__name__)

# Seconds a bind task may run: it is told to stop (SoftTimeLimitExceeded) at the first,
# killed at the second, both before its message could be handed out again.
BIND_TIME_LIMIT = (settings.SCHEDVIEW_BIND_REDELIVERY * 0.6,
                   settings.SCHEDVIEW_BIND_REDELIVERY * 0.8)


def backoff(attempt: int) -> float:
    """Seconds before attempt + 1: doubling from SCHEDVIEW_BIND_BACKOFF, at most 2 s."""
    return min(settings.SCHEDVIEW_BIND_BACKOFF * 2 ** (attempt - 1), 2.0)


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
             reject_on_worker_lost=True, soft_time_limit=BIND_TIME_LIMIT[0],
             time_limit=BIND_TIME_LIMIT[1])
def bind_pod(uid: str, namespace: str, name: str, node: str, attempt: int = 1) -> str:
    """Bind one assumed pod and tell the owner; returns "finish" or "forget" (what the
    owner was told), or "retry" (another attempt is queued)."""
    try:
        outcome, reason = bind_once(uid, namespace, name, node)
    except SoftTimeLimitExceeded:
        outcome, reason = RETRY, "the bind task ran out of time"
    command = _settle(uid, namespace, name, node, attempt, outcome, reason)
    if command is None:
        return RETRY
    settle_binds([command])
    return FINISH if command[0] == "finish_binding" else FORGET


@shared_task(name="dashboard.tasks.bind_pods", ignore_result=True, acks_late=True,
             reject_on_worker_lost=True, soft_time_limit=BIND_TIME_LIMIT[0],
             time_limit=BIND_TIME_LIMIT[1])
def bind_pods(batch: list) -> dict:
    """Bind many assumed pods, [[uid, namespace, name, node], ...], in one task: one
    Celery message and one RPUSH of their commands instead of one of each per pod.
    Failures, and the pods left when the task's time runs out, are retried one by one
    (bind_pod, attempt 2). Returns outcome counts."""
    commands, counts = [], {FINISH: 0, FORGET: 0, RETRY: 0}
    done = 0
    try:
        for uid, namespace, name, node in batch:
            outcome, reason = bind_once(uid, namespace, name, node)
            commands.append(_settle(uid, namespace, name, node, 1, outcome, reason))
            counts[outcome] += 1
            done += 1
    except SoftTimeLimitExceeded:
        for uid, namespace, name, node in batch[done:]:
            commands.append(_settle(uid, namespace, name, node, 1, RETRY,
                                    "the bind task ran out of time"))
            counts[RETRY] += 1
    settle_binds([c for c in commands if c is not None])
    return counts


# -- periodic --------------------------------------------------------------------------------

@shared_task(name="dashboard.tasks.reap", ignore_result=True)
def reap() -> str:
    """Ask the owner to expire assumed pods whose binding finished more than TTL ago.
    The command dies with the period: a queue of reaps never piles up for the owner."""
    return owner_client.reap(period=settings.SCHEDVIEW_REAP_PERIOD)


@shared_task(name="dashboard.tasks.compare", ignore_result=True)
def compare() -> str:
    """Ask the owner to compare its cache with the cluster (it logs and counts differences)."""
    return owner_client.compare(period=settings.SCHEDVIEW_COMPARE_PERIOD)


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
    """The embedded default's kube-scheduler (extender/standin.py): up to `limit` due pending
    pods, highest priority first, through the owner's extender (its own filters, then
    filter and bind, or preempt), each failure backing off that pod alone. Returns the
    outcomes; nothing when SCHEDVIEW_EXTENDER_ADDRESS is empty."""
    scheduler = standin.stand_in(kube.core_api)
    if scheduler is None:
        return dict.fromkeys(standin.OUTCOMES, 0)
    return scheduler.period(limit, first_sync=standin.FIRST_SYNC)
