"""The pools process's Prometheus metrics, from the statuses it publishes every 500 ms.

A scrape reads the statuses the loop last published (`PoolsProcess.statuses_shown`),
never a scheduler's lock: per pool, the queue, idle pods, claims in flight, claim
outcomes and the dispatch latency (enqueue to claimed) in warmpool's fixed buckets.
"""
from prometheus_client.core import (CounterMetricFamily, GaugeMetricFamily,
                                    HistogramMetricFamily)
from prometheus_client.registry import Collector


class PoolsMetrics(Collector):
    def __init__(self, statuses):
        self.statuses = statuses   # () -> {pool: status}, as last published

    def collect(self):
        statuses = self.statuses()
        gauges = {key: GaugeMetricFamily(f"schedview_pool_{key}", doc, labels=["pool"])
                  for key, doc in (("queue_length", "Claims waiting for an idle pod"),
                                   ("capacity", "Claims a pool queues before it answers 429"),
                                   ("idle_ready", "Idle pods ready to be claimed"),
                                   ("members", "Pods in the pool"),
                                   ("claims_in_flight", "Claims at the API server"))}
        outcomes = CounterMetricFamily("schedview_pool_claims", "Claims by outcome",
                                       labels=["pool", "outcome"])
        latency = HistogramMetricFamily("schedview_pool_dispatch_seconds",
                                        "Seconds from a claim enqueued to its pod claimed",
                                        labels=["pool"])
        for pool, status in sorted(statuses.items()):
            for key, gauge in gauges.items():
                gauge.add_metric([pool], status.get(key) or 0)
            metrics = status.get("metrics") or {}
            for outcome, count in (metrics.get("outcomes") or {}).items():
                outcomes.add_metric([pool, outcome], count)
            histogram = metrics.get("latency")
            if histogram:
                cumulative, buckets = 0, []
                for bound, count in zip(histogram["bounds"], histogram["counts"]):
                    cumulative += count
                    buckets.append((repr(float(bound)), cumulative))
                buckets.append(("+Inf", histogram["total"]))
                latency.add_metric([pool], buckets, histogram["sum"])
        yield from gauges.values()
        yield outcomes
        yield latency
