"""schedview's Django app, `dashboard`: the project's settings, urls, asgi and Celery app,
the tables, every process's entry command (management/commands) and one subpackage per
process, with what several of them share beside them (kube, runtime, readmodel, clients)
and what they say to each other (wire). Nothing is imported here, so that Django-free
subpackages (wire) stay Django-free."""
