"""The Celery app, configured from Django's settings (the CELERY_* names).

Its broker and result backend are the Redis of REDIS_URL (see redis_urls).
Tasks and the beat schedule join in the next issue.
"""
import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

app = Celery("schedview")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
