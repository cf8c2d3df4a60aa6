"""The stand-in's process (`manage.py standin`): kube-scheduler's scheduling loop, in small
steps, for a cluster that has none (the embedded default's simulated cluster).

Each step is one period of `StandIn.period()`: up to `limit` due pending pods through the
owner's extender. While steps place pods and leave more due (they attempted their
`limit`), the next follows at once, as kube-scheduler pops its queue as fast as it
schedules (hundreds a second); otherwise the loop waits `period` seconds, or less when
it is told to stop. A fixed 20 a second fell behind a churn of 200 changes a second
(about 70 new pods), and the pending pods piled up in every process (issue 26). Each
step begins by applying the watch events since the last, so placing at full speed
still sees the cluster change. Its view of the cluster (the watches), its queue (each
pod's backoff) and its kept-alive connection to the listener live as long as the
process, as kube-scheduler's do.
"""
import logging
import threading
import time
from collections import Counter

from dashboard.standin.standin import FIRST_SYNC, HttpDoor, StandIn
from dashboard.standin.standin_view import ClusterView

log = logging.getLogger(__name__)

LOG_PERIOD = 10.0   # seconds between the lines that sum back-to-back steps


def keeps_placing(counts: dict, limit: int) -> bool:
    """Whether a step's outcomes call for the next step at once: it placed a pod and
    attempted its limit (more may be due). Steps that place nothing (every due pod
    unschedulable or failing) are paced by the period."""
    attempts = sum(n for kind, n in counts.items() if kind != "victims")
    return counts.get("bind", 0) > 0 and attempts >= limit


class StandInLoop:
    """`step()` runs one period and says what happened; `run(stop)` steps until `stop` is
    set. `make_api()` gives a CoreV1Api for the cluster; the extender is on `address`."""

    def __init__(self, make_api, address: str, *, call_timeout: float, period: float,
                 limit: int = 20, ignored_resources: frozenset = frozenset(),
                 watch_list: bool = False):
        """`watch_list`: list through the watch where the server offers it, as the owner's
        decoder does (SCHEDVIEW_WATCH_LIST)."""
        self.period, self.limit = period, limit
        door = HttpDoor(address, call_timeout)
        self.scheduler = StandIn(make_api(), door, ClusterView(make_api(), watch_list=watch_list),
                                 ignored_resources=ignored_resources)
        self.started = time.monotonic()

    def step(self, now: float | None = None) -> dict:
        """One period: the outcomes' counts (all zero while the first lists are not in,
        waiting for them at most what is left of FIRST_SYNC)."""
        first_sync = max(0.0, FIRST_SYNC - (time.monotonic() - self.started))
        return self.scheduler.period(self.limit, now=now, first_sync=first_sync)

    def run(self, stop: threading.Event) -> None:
        self.scheduler.view.start()
        tally, since = Counter(), time.monotonic()
        try:
            while not stop.is_set():
                counts = self.step()
                tally.update(counts)
                placing = keeps_placing(counts, self.limit)
                if +tally and (not placing or time.monotonic() - since >= LOG_PERIOD):
                    log.info("period: %s", ", ".join(f"{k} {v}" for k, v in tally.items() if v))
                    tally, since = Counter(), time.monotonic()
                if not placing:
                    stop.wait(self.period)
        finally:
            self.scheduler.close()
