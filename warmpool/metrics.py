"""A pool scheduler's counters and its dispatch latency histogram (enqueue to claim).

Plain numbers guarded by the scheduler's lock; `snapshot()` copies them out for
status pages, the REST API and the benchmark.
"""
from bisect import bisect_left

# Upper bounds of the latency buckets, in seconds; one more bucket holds the rest.
LATENCY_BUCKETS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
OUTCOMES = ("success", "retriable", "hard", "expired", "shutdown")


class LatencyHistogram:
    def __init__(self, bounds=LATENCY_BUCKETS):
        self.bounds = tuple(bounds)
        self.counts = [0] * (len(self.bounds) + 1)
        self.total = 0
        self.sum = 0.0

    def observe(self, seconds: float) -> None:
        self.counts[bisect_left(self.bounds, seconds)] += 1
        self.total += 1
        self.sum += seconds

    def quantile(self, q: float) -> float | None:
        """The upper bound of the bucket holding quantile `q` (None when empty; the
        last bucket answers its lower bound)."""
        if not self.total:
            return None
        rank = q * self.total
        seen = 0
        for i, count in enumerate(self.counts):
            seen += count
            if seen >= rank and count:
                return self.bounds[min(i, len(self.bounds) - 1)]
        return self.bounds[-1]

    def snapshot(self) -> dict:
        return {"bounds": list(self.bounds), "counts": list(self.counts), "total": self.total,
                "sum": self.sum, "p50": self.quantile(0.5), "p99": self.quantile(0.99)}


class PoolMetrics:
    def __init__(self):
        self.latency = LatencyHistogram()
        self.outcomes = dict.fromkeys(OUTCOMES, 0)
        self.refreshes = 0
        self.polls = 0
        self.reservations_expired = 0
        self.refused = 0          # enqueues refused: queue full or shut down

    def snapshot(self) -> dict:
        return {"latency": self.latency.snapshot(), "outcomes": dict(self.outcomes),
                "refreshes": self.refreshes, "polls": self.polls,
                "reservations_expired": self.reservations_expired, "refused": self.refused}
