"""The comparer's lists on a quiet cluster: the API server's version moves (leases) while the
pod and node watches see nothing, so waiting for them to pass it must not fail the comparison."""
import threading
from types import SimpleNamespace

from dashboard.owner.runner import list_for_comparison


class Decoder:
    """The decoder process's face the comparer uses: lists at a version, reflectors at theirs."""

    def __init__(self, listed_at, watched_at):
        self.reflectors = [SimpleNamespace(resource_version=v) for v in watched_at]
        self.listed_at = listed_at

    def list_for_comparison(self, timeout):
        return SimpleNamespace(nodes=["n"], pods=["p"], resource_version=self.listed_at)


def test_a_watch_that_passed_the_lists_is_compared_at_once():
    request = list_for_comparison(Decoder("50", ["51", "60"]), threading.Event(), settle=5)
    assert (request.nodes, request.pods, request.resource_version) == (["n"], ["p"], "50")
    assert not request.watch_behind


def test_a_quiet_watch_behind_the_lists_is_compared_after_the_settle_time():
    # a real quiet cluster: lists at 9120 (lease renewals), pods and nodes last seen at 8811
    request = list_for_comparison(Decoder("9120", ["8811", "8811"]), threading.Event(),
                                  settle=0.2)
    assert request.resource_version == "9120" and request.watch_behind
