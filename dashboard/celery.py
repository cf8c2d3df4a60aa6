"""The Celery app, configured from Django's settings (the CELERY_* names).

Its broker and result backend are the Redis of REDIS_URL (see redis_urls); its tasks
are dashboard/worker/tasks.py's (which connects the worker's probes to its signals), its
beat schedule in settings (CELERY_BEAT_SCHEDULE).
"""
import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

app = Celery("schedview")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["dashboard.worker"])
