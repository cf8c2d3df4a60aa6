"""The Celery tasks other processes queue by name: the owner and the web send them
without importing the worker's package (Celery routes a message by its task name)."""

BIND_POD = "worker.tasks.bind_pod"      # args: uid, namespace, name, node
BIND_PODS = "worker.tasks.bind_pods"    # args: [[uid, namespace, name, node], ...]
# The queue they wait in: a Redis list of this name on the broker (the overview counts it).
QUEUE = "celery"
