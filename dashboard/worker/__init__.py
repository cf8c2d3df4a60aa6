"""The Celery tasks (worker and beat: `celery -A dashboard worker`), and the worker's probes."""
