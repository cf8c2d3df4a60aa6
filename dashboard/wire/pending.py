"""What the owner and the web agree on about the Pending page's `pending_pods` command:
the largest page one answer holds, and the filters' longest value (a reason is one
sentence of kube-scheduler's, a namespace a Kubernetes name)."""
MAX_LIMIT = 500            # pods in one pending_pods answer
MAX_FILTER = 253           # characters of a reason or namespace filter
