"""A pool's claims over the health window, from the cumulative counters its scheduler keeps."""
from dashboard.poolkeeper.recent import RecentClaims
from warmpool.metrics import LATENCY_BUCKETS, OUTCOMES


class Clock:
    now = 0.0

    def __call__(self):
        return self.now


def status(waits: dict, **outcomes) -> dict:
    """A scheduler's status with `waits` ({bucket index: claims}) and outcome counters."""
    counts = [waits.get(i, 0) for i in range(len(LATENCY_BUCKETS) + 1)]
    return {"metrics": {"latency": {"bounds": list(LATENCY_BUCKETS), "counts": counts},
                        "outcomes": dict(dict.fromkeys(OUTCOMES, 0), **outcomes)}}


def test_the_figures_are_what_ended_within_the_window():
    clock = Clock()
    recent = RecentClaims(60, clock)
    fast = LATENCY_BUCKETS.index(0.01)
    slow = LATENCY_BUCKETS.index(5.0)
    first = recent.figures({"web": status({fast: 100}, success=100)})["web"]
    assert (first["claims"], first["wait_p99"]) == (0, None)     # nothing since it started
    clock.now = 30
    mid = recent.figures({"web": status({fast: 100, slow: 20}, success=110, expired=10)})["web"]
    assert (mid["claims"], mid["claimed"], mid["expired"], mid["wait_p99"]) == (20, 10, 10, 5.0)
    clock.now = 95      # the starving half minute has left the window: the pool serves again
    late = recent.figures({"web": status({fast: 150, slow: 20}, success=160, expired=10)})["web"]
    assert (late["claims"], late["expired"], late["wait_p99"]) == (50, 0, 0.01)
    assert late["window"] == 60
    # A pool that appeared since counts from nothing.
    assert recent.figures({"new": status({fast: 3}, success=3)})["new"]["claims"] == 3
