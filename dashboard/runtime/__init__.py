"""Running the processes: the supervisor of `manage.py up` and its children as the overview
shows them, the probe server, Redis clients that fail fast, the embedded Redis."""
