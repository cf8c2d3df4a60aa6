"""`manage.py pools`: run a warm pool scheduler per pool on the cluster feed and serve the
web's claim requests (see pools/). Run one per cluster."""
import argparse
import logging
import signal
import threading

from django.conf import settings
from django.core.management.base import BaseCommand
from prometheus_client import REGISTRY

from dashboard.kube import client as kube
from dashboard.poolkeeper.demand import parse_demand, run_demand
from dashboard.poolkeeper.metrics import PoolsMetrics
from dashboard.poolkeeper.runner import PoolsProcess
from dashboard.runtime.probes import ProbeServer
from dashboard.runtime.redis_outage import fail_fast_layer, loop_client


class Command(BaseCommand):
    help = "Claim idle pods of warm pools for the web's requests (one scheduler per pool)."

    def add_arguments(self, parser):
        parser.add_argument("--capacity", type=int, default=1024,
                            help="claim requests a pool queues before it answers 429")
        parser.add_argument("--max-inflight", type=int, default=32,
                            help="claims a pool has at the API server at once")
        parser.add_argument("--reservation-ttl", type=float, default=2.0,
                            help="seconds a claimed pod is kept from other requests")
        parser.add_argument("--idle-notify-delay", type=float, default=0.2,
                            help="seconds between a pod turning idle and the refresh")
        parser.add_argument("--demand", type=_demand, default={},
                            help="synthetic claims per second, e.g. web=3,batch=0.5 (demo)")

    def handle(self, *args, capacity, max_inflight, reservation_ttl, idle_notify_delay,
               demand, **options):
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        process = PoolsProcess(kube.api_client().configuration, loop_client(settings.REDIS_URL),
                               capacity=capacity, max_inflight=max_inflight,
                               reservation_ttl=reservation_ttl,
                               idle_notify_delay=idle_notify_delay, layer=fail_fast_layer())
        run_demand(process.feed.scheduler, demand, stop)
        REGISTRY.register(PoolsMetrics(lambda: process.statuses_shown))
        # Live while its loop turns; ready as soon as it serves claims (no lease, no sync).
        server = (ProbeServer(settings.SCHEDVIEW_PROBE_ADDRESS, process.heartbeat.cause,
                              process.heartbeat.cause).start()
                  if settings.SCHEDVIEW_PROBE_ADDRESS else None)
        self.stdout.write("pools: watching pool pods, serving claims")
        self.stdout.flush()
        try:
            process.run(stop)
        finally:
            if server is not None:
                server.close()


def _demand(text: str) -> dict:
    try:
        return parse_demand(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
