"""kube-scheduler's stand-in: schedules the simulated cluster's pending pods through the
owner's extender, as kube-scheduler configured with it would (run by a Celery task)."""
