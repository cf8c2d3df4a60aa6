"""A simulated Kubernetes cluster: a fake kube-apiserver the official client talks to.

See cluster.SimCluster (in-process), __main__ (CLI), generate (cluster data).
"""

from simcluster.cluster import SimCluster

__all__ = ["SimCluster"]
