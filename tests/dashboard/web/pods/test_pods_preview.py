"""The confirmation's arithmetic: a node's aggregates before and after one pod leaves it."""
import pytest

from dashboard.web.pods.action_preview import Aggregates, preview
from tests.dashboard.web.pods.podpages import MIB, node, pod

pytestmark = pytest.mark.django_db


def test_the_pod_requests_come_off_the_node_and_one_pod_less():
    node("n1", pods=4, cpu=2000, memory=1024 * MIB, non_zero_cpu=2100, non_zero_memory=1224 * MIB)
    result = preview(pod("a", "Assumed", node="n1", milli_cpu=500, memory=256 * MIB))
    assert result.before == Aggregates(4, 2000, 1024 * MIB, 2100, 1224 * MIB)
    assert result.after == Aggregates(3, 1500, 768 * MIB, 1600, 968 * MIB)
    assert [(c.label, c.before, c.after) for c in result.changes] == [
        ("Pods", "4", "3"), ("Requested CPU", "2 cores", "1.5 cores"),
        ("Requested memory", "1,024 MiB", "768 MiB"),
        ("Non-zero requested CPU", "2.1 cores", "1.6 cores"),
        ("Non-zero requested memory", "1,224 MiB", "968 MiB")]


def test_a_pod_without_requests_counts_the_schedulers_defaults_as_non_zero():
    node("n1", pods=1, cpu=0, memory=0, non_zero_cpu=100, non_zero_memory=200 * MIB)
    result = preview(pod("a", "Assumed", node="n1"))
    assert result.after == Aggregates(0, 0, 0, 0, 0)
    assert [c.changed for c in result.changes] == [True, False, False, True, True]


def test_a_lagging_read_model_never_goes_below_zero():
    node("n1", pods=0, cpu=100, memory=0)
    assert preview(pod("a", "Assumed", node="n1", milli_cpu=500, memory=MIB)).after == \
        Aggregates(0, 0, 0, 0, 0)


def test_a_pod_without_a_known_node_has_nothing_to_compare():
    for result in (preview(pod("a", "Assumed", node="gone")), preview(pod("b", "Pending"))):
        assert not result.node_known and result.changes == []
