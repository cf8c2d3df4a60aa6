"""The Celery app, configured from Django's settings (the CELERY_* names).

Its broker and result backend are the Redis of REDIS_URL (see redis_urls); its tasks
are dashboard/worker/tasks.py's, its beat schedule in settings (CELERY_BEAT_SCHEDULE).
"""
import os

from celery import Celery
from celery.signals import worker_init, worker_process_shutdown

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

app = Celery("schedview")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["dashboard.worker"])


@worker_init.connect
def _serve_probes(**_):
    """The worker's main process serves its children's metrics (worker/worker_probes)."""
    from dashboard.worker import worker_probes
    worker_probes.serve_probes()


@worker_process_shutdown.connect
def _child_exited(pid=None, **_):
    from dashboard.worker import worker_probes
    worker_probes.child_exited(pid or os.getpid())
