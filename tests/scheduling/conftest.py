"""Fixtures for the scheduling tests (no Django, no network)."""
import pytest

from schedcache import Cache
from scheduling import DefaultAlgorithm
from simcluster.generate import make_node


@pytest.fixture
def cluster():
    """(cache, algorithm, add_node) over an empty cache."""
    cache = Cache(ttl=0)
    algorithm = DefaultAlgorithm(cache)

    def add(name, **kwargs):
        node = make_node(name, **kwargs)
        cache.add_node(node)
        return node
    return cache, algorithm, add
