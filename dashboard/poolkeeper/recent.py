"""Each pool's claims over the last window, for the pools' health.

A pool scheduler keeps cumulative counters (outcomes, the dispatch latency histogram)
since the process started; health needs what happened lately: a pool that starved an
hour ago and serves now is healthy, and one starving now with a good history is not.
Every publication keeps the counters it saw; the figures are the difference from the
oldest kept one within the window (SCHEDVIEW_HEALTH_WINDOW, the one every failure
figure is counted over).
"""
import time
from collections import deque

from warmpool.metrics import LatencyHistogram


class RecentClaims:
    def __init__(self, window: float, clock=time.monotonic):
        self.window, self.clock = window, clock
        self._seen = deque()    # (when, {pool: (latency counts, outcomes)}), oldest first

    def figures(self, statuses: dict) -> dict:
        """{pool: {"window", "claims", "claimed", "expired", "wait_p99"}}: the claims ended
        in the window (or since the first publication, when that is more recent), and the
        99th percentile of their waits (an upper bucket bound, None without claims)."""
        now = self.clock()
        self._seen.append((now, {pool: (list(s["metrics"]["latency"]["counts"]),
                                        dict(s["metrics"]["outcomes"]))
                                 for pool, s in statuses.items()}))
        while len(self._seen) > 1 and self._seen[1][0] <= now - self.window:
            self._seen.popleft()
        _, before = self._seen[0]
        figures = {}
        for pool, s in statuses.items():
            latency, outcomes = s["metrics"]["latency"], s["metrics"]["outcomes"]
            old_counts, old_outcomes = before.get(pool, ([0] * len(latency["counts"]), {}))
            waits = LatencyHistogram(latency["bounds"])
            waits.counts = [new - old for new, old in zip(latency["counts"], old_counts)]
            waits.total = sum(waits.counts)
            ended = {name: count - old_outcomes.get(name, 0) for name, count in outcomes.items()}
            figures[pool] = {"window": self.window, "claims": sum(ended.values()),
                             "claimed": ended.get("success", 0),
                             "expired": ended.get("expired", 0),
                             "wait_p99": waits.quantile(0.99)}
        return figures
