"""Five pending pods over one node (cpu 32), for the Pending page's tests of the owner's
`pending_pods` command and of the page: kube-scheduler's queue puts them in the order
big, b, a, d, e (priority desc, then the earliest created)."""
from datetime import timedelta

from simcluster.generate import BASE_TIME, make_pod

CPU = "Insufficient cpu"
SELECTOR = "node(s) didn't match Pod's node affinity/selector"


def pod(name, namespace, priority, seconds, **shape):
    return make_pod(name, namespace=namespace, priority=priority, uid=f"uid-{name}",
                    created=BASE_TIME + timedelta(seconds=seconds), **shape)


def queue_pods():
    """Listed out of order."""
    return [pod("a", "team", 10, 2, requests={"cpu": "1"}),
            pod("e", "team", 0, 3, requests={"cpu": "64"}),
            pod("d", "batch", 0, 0, node_selector={"disk": "ssd"}),
            pod("big", "batch", 100, 5, requests={"cpu": "64"}),
            pod("b", "team", 10, 1, requests={"cpu": "1"})]
