"""The Celery worker's probes and /metrics, served by its main process.

The worker forks children (prefork) that run the binds, so the official client's
multiprocess mode keeps each child's numbers (dashboard/kube/binding_metrics.py) in files
under PROMETHEUS_MULTIPROC_DIR (which must be set, to an empty directory, before the
worker starts: the client picks its storage when first imported), and the worker's
main process serves them all, summed, on SCHEDVIEW_PROBE_ADDRESS. Without the directory
it serves its own process's numbers only (enough for `--pool solo` or threads).
"""
import os

from celery.signals import worker_init, worker_process_shutdown
from django.conf import settings
from prometheus_client import REGISTRY, CollectorRegistry, multiprocess

from dashboard.runtime.probes import ProbeServer


def registry() -> CollectorRegistry:
    """What the worker's /metrics shows: every child's numbers in multiprocess mode."""
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return REGISTRY
    collected = CollectorRegistry()
    multiprocess.MultiProcessCollector(collected)
    return collected


@worker_init.connect
def serve_probes(**_) -> ProbeServer | None:
    """In the worker's main process, when SCHEDVIEW_PROBE_ADDRESS is set. Live while the
    process serves; ready when the broker (Redis) answers."""
    if not settings.SCHEDVIEW_PROBE_ADDRESS:
        return None
    from dashboard.readmodel.health import redis_error
    return ProbeServer(settings.SCHEDVIEW_PROBE_ADDRESS, lambda: None, redis_error,
                       registry()).start()


@worker_process_shutdown.connect
def child_exited(pid=None, **_) -> None:
    """A child's gauges (none yet) would otherwise count forever; its counters stay."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        multiprocess.mark_process_dead(pid or os.getpid())
