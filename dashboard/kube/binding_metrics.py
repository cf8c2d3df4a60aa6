"""The Binding POST's metrics, in whichever process posts it: the owner (its extender
listener binds before it answers kube-scheduler) and Celery's workers (every other
bind). In a worker's prefork children the official client's multiprocess mode keeps
them (see dashboard/worker/worker_probes.py)."""
from prometheus_client import Histogram

BINDING_SECONDS = Histogram(
    "schedview_binding_post_seconds",
    "Seconds a Binding POST took (with the read-back after a 409), by what it meant: "
    "finish, forget, or retry", ["outcome"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))


def observe(outcome: str, seconds: float) -> None:
    BINDING_SECONDS.labels(outcome).observe(seconds)
