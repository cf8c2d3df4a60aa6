"""schedview's Django project: settings, URLs, the ASGI application, the Celery app.

The Celery app is imported here, as Celery's Django guide does, so that
`@shared_task` functions bind to it whichever process imports them first.
"""
from schedview.celery import app as celery_app

__all__ = ["celery_app"]
