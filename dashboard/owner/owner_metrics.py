"""The cache owner's Prometheus metrics.

Why a collector fed at each flush: a scrape must cost nothing per pod (150,000 pods,
under 100 ms) and must not touch the cache from the server's thread while the owner's
thread changes it. The owner already computes its status every flush (100 ms); it
hands that dict here with the flush's events (`record_flush`), and a scrape reads only
what the last flush left: a few dozen numbers, swapped in as whole objects.

What it exports (the names the Grafana dashboard and alert rules use):
cache pods by state, nodes, the cache's and the snapshot's generation and the lag
between them, feed events applied and skipped, the feed and read-model backlogs, the
feed's lag in seconds, the seconds each kind's watch has been silent,
transitions by kind and cause, bind outcomes (transitions of cause "bind") and the
bind's duration from assume to the bind going through, stuck binds, comparisons by result,
each command's handling time (the extender's verbs are the `extender_*` ops), and the
pending pods by their first reason (pending_reasons.py).
"""
from contextlib import contextmanager
import time

from prometheus_client import Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

BIND_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
COMMAND_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5)


class OwnerMetrics(Collector):
    def __init__(self):
        self._status = {}
        self._transitions = {}          # (kind, cause) -> count since the owner started
        self._comparisons = {"clean": 0, "drift": 0}
        # Not in any registry of their own: collect() yields them with the rest.
        self.bind_seconds = Histogram(
            "schedview_bind_duration_seconds",
            "Seconds from a pod assumed to its bind going through (its binding finished, or "
            "the watch seeing it bound, whichever came first): the bind path end to end",
            buckets=BIND_BUCKETS, registry=None)
        self.command_seconds = Histogram(
            "schedview_owner_command_seconds",
            "Seconds the owner's thread spent on a command; extender_filter, extender_bind "
            "and extender_preempt are kube-scheduler's extender verbs",
            ["op"], buckets=COMMAND_BUCKETS, registry=None)
        self._command_children = {}

    # --- the owner's thread -------------------------------------------------------------------
    def record_flush(self, events, status: dict, comparer_runs=(), bind_seconds=()):
        """A flush's (event, cause, actor, at) tuples, the status it published, the
        comparisons it recorded, and the durations of the binds that went through (timed
        by the owner's record of assumptions, dashboard/owner/assumptions.py)."""
        counts = dict(self._transitions)
        for event, cause, _actor, _at, _detail in events:
            key = (event.kind, cause)
            counts[key] = counts.get(key, 0) + 1
        for seconds in bind_seconds:
            self.bind_seconds.observe(seconds)
        if comparer_runs:
            comparisons = dict(self._comparisons)
            for run in comparer_runs:
                comparisons["clean" if run["clean"] else "drift"] += 1
            self._comparisons = comparisons
        self._transitions = counts
        self._status = status

    @contextmanager
    def timing(self, op: str):
        child = self._command_children.get(op)
        if child is None:
            child = self._command_children[op] = self.command_seconds.labels(op)
        started = time.perf_counter()
        try:
            yield
        finally:
            child.observe(time.perf_counter() - started)

    # --- a scrape -----------------------------------------------------------------------------
    def collect(self):
        status, transitions, comparisons = self._status, self._transitions, self._comparisons
        pods = GaugeMetricFamily("schedview_cache_pods",
                                 "Pods by state: in the cache (Assumed, Added) or pending",
                                 labels=["state"])
        if status:
            assumed = status.get("assumed", 0)
            pods.add_metric(["Assumed"], assumed)
            pods.add_metric(["Added"], status.get("pods", 0) - assumed)
            # The owner's pending map keeps assumed pods until the watch sees them bound.
            pods.add_metric(["Pending"], max(0, status.get("pending", 0) - assumed))
        yield pods
        for name, key, doc in (
                ("schedview_cache_nodes", "nodes", "Nodes in the cache"),
                ("schedview_cache_generation", "generation", "The cache's generation"),
                ("schedview_snapshot_generation", "snapshot_generation",
                 "The generation of the owner's latest snapshot"),
                ("schedview_feed_backlog", "feed_backlog",
                 "Decoder messages (batches of watch events, list pages) queued for the owner, "
                 "not applied yet"),
                ("schedview_feed_lag_seconds", "feed_lag",
                 "Seconds the cache is behind the watch events received: the oldest queued "
                 "item's age, or the longest an item applied since the last flush waited"),
                ("schedview_read_model_backlog", "read_model_backlog",
                 "Changes not yet written to the database the pages read"),
                ("schedview_write_waiting_seconds", "write_waiting",
                 "Seconds the database write in progress has taken (0: none in progress)"),
                ("schedview_binds_stuck", "binds_stuck",
                 "Assumed pods whose bind has not finished in time")):
            gauge = GaugeMetricFamily(name, doc)
            if status:
                gauge.add_metric([], status.get(key, 0) or 0)
            yield gauge
        lag = GaugeMetricFamily("schedview_snapshot_lag_generations",
                                "Generations the snapshot is behind the cache")
        synced = GaugeMetricFamily("schedview_owner_synced",
                                   "1 when the owner leads with a synced cache")
        if status:
            lag.add_metric([], max(0, status.get("generation", 0)
                                   - status.get("snapshot_generation", 0)))
            synced.add_metric([], 1 if status.get("synced") else 0)
        yield lag
        yield synced
        reasons = GaugeMetricFamily(
            "schedview_pending_pods",
            "Pending pods by their first reason: the one most nodes give in the pod's "
            "diagnosis, in kube-scheduler's words (re-counted every 30 s)", labels=["reason"])
        for reason, count in sorted((status.get("pending_reasons") or {}).items()):
            reasons.add_metric([reason], count)
        yield reasons
        silence = GaugeMetricFamily(
            "schedview_watch_silence_seconds",
            "Seconds since the API server last spoke (an event, a bookmark, a list page) to "
            "the owner's watch of each kind; past SCHEDVIEW_WATCH_SILENCE the watch is "
            "restarted", labels=["kind"])
        for kind, seconds in sorted((status.get("watch_silent") or {}).items()):
            silence.add_metric([kind], seconds)
        yield silence
        feed = CounterMetricFamily("schedview_feed_events",
                                   "Feed events the owner handled, by result", labels=["result"])
        for result in ("applied", "skipped", "corrupted"):
            if status:
                feed.add_metric([result], status.get(result, 0))
        yield feed
        changes = CounterMetricFamily("schedview_transitions",
                                      "Cache transitions by kind and cause (bind outcomes: "
                                      "cause bind)", labels=["kind", "cause"])
        for (kind, cause), count in sorted(transitions.items()):
            changes.add_metric([kind, cause], count)
        yield changes
        runs = CounterMetricFamily("schedview_comparisons",
                                   "Cache/cluster comparisons by result", labels=["result"])
        for result, count in comparisons.items():
            runs.add_metric([result], count)
        yield runs
        yield from self.bind_seconds.collect()
        yield from self.command_seconds.collect()
