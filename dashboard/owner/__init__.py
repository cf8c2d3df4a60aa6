"""The cache owner process (`manage.py watch`): the one writer of the scheduler cache.

Its decoder child lists and watches the cluster; the owner applies the feed and the
commands, decides kube-scheduler's extender calls on its own listener (extender/),
compares the cache with the cluster, writes the read model and publishes events."""
