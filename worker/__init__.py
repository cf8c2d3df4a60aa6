"""The Celery tasks (worker and beat: `celery -A schedview worker`), and the worker's probes."""
