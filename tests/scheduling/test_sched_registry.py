"""Choosing the algorithm by a dotted-path setting."""
import pytest

from schedcache import Cache
from scheduling import DEFAULT_ALGORITHM, AlgorithmLoadError, DefaultAlgorithm, load_algorithm
from scheduling.result import ScheduleResult


class FirstNodeAlgorithm:
    """A second algorithm: bind on the first suggested node, always."""

    def __init__(self, cache=None, greeting="hi"):
        self.greeting = greeting

    def schedule(self, pod, suggested_nodes):
        return ScheduleResult.bind(list(suggested_nodes)[0])

    def add_node(self, node): ...
    def update_node(self, old_node, new_node): ...
    def delete_node(self, node): ...
    def add_allocated_pod(self, pod): ...
    def delete_allocated_pod(self, pod): ...


class NotAnAlgorithm:
    def schedule(self, pod, suggested_nodes): ...


NOT_A_CLASS = 42


def test_loads_the_default():
    algorithm = load_algorithm(DEFAULT_ALGORITHM, cache=Cache())
    assert isinstance(algorithm, DefaultAlgorithm)
    assert isinstance(load_algorithm("", cache=Cache()), DefaultAlgorithm)


@pytest.mark.parametrize("path", ["tests.scheduling.test_sched_registry.FirstNodeAlgorithm",
                                  "tests.scheduling.test_sched_registry:FirstNodeAlgorithm"])
def test_loads_another_class_with_its_arguments(path):
    algorithm = load_algorithm(path, cache=Cache(), greeting="hello")
    assert isinstance(algorithm, FirstNodeAlgorithm) and algorithm.greeting == "hello"
    assert algorithm.schedule({}, ["x", "y"]).bind_info.node == "x"


@pytest.mark.parametrize("path, message", [
    ("NoDots", "not a dotted path"),
    ("no_such_module_xyz.Algorithm", "cannot import module"),
    ("scheduling.algorithm.Missing", "has no attribute"),
    ("tests.scheduling.test_sched_registry.NOT_A_CLASS", "not a class"),
    ("tests.scheduling.test_sched_registry.NotAnAlgorithm", "lacks add_node"),
])
def test_refuses_bad_paths(path, message):
    with pytest.raises(AlgorithmLoadError, match=message):
        load_algorithm(path, cache=Cache())
