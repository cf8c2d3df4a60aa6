"""Fixtures: a small simulated cluster per test, the official client, raw HTTP, captures."""

import pytest

from simcluster import SimCluster
from simcluster.generate import generate_cluster

from tests.simcluster.simhelpers import Raw


@pytest.fixture(scope="session")
def small_cluster():
    """Generated once; SimCluster serializes it, so tests cannot change it."""
    return generate_cluster(nodes=12, pods=150, zones=3, seed=7, pending_fraction=0.1,
                            namespaces=4)


@pytest.fixture
def sim(small_cluster):
    """A served cluster without churn or kubelet, so every change comes from the test."""
    with SimCluster(cluster=small_cluster, kubelet=False, namespaces=4) as s:
        yield s


@pytest.fixture
def raw(sim):
    return Raw(sim.url)
