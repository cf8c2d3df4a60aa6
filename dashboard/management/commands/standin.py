"""`manage.py standin`: kube-scheduler's stand-in for a cluster without one (the embedded
default's simulated cluster, where `manage.py up` runs it). It drives the leading owner's
extender on SCHEDVIEW_EXTENDER_ADDRESS as kube-scheduler does (dashboard/standin/).
Never point it at a cluster with a real kube-scheduler: both would place the same pods.
"""
import logging
import signal
import threading

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from dashboard.kube import client as kube
from dashboard.standin.runner import StandInLoop


class Command(BaseCommand):
    help = "Schedule the cluster's pending pods through the extender, as kube-scheduler does."

    def add_arguments(self, parser):
        parser.add_argument("--period", type=float,
                            default=settings.SCHEDVIEW_SCHEDULE_PERIOD or 1.0,
                            help="seconds between periods (SCHEDVIEW_SCHEDULE_PERIOD, else 1)")
        parser.add_argument("--limit", type=int, default=20,
                            help="due pods attempted a period, highest priority first")

    def handle(self, *args, period, limit, **options):
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
        if not settings.SCHEDVIEW_EXTENDER_ADDRESS:
            raise CommandError("SCHEDVIEW_EXTENDER_ADDRESS is empty: the stand-in has no "
                               "extender to call")
        if period <= 0 or limit <= 0:
            raise CommandError("--period and --limit must be positive")
        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        # The listener waits up to the extender timeout for the owner, then answers.
        StandInLoop(kube.core_api, settings.SCHEDVIEW_EXTENDER_ADDRESS,
                    call_timeout=settings.SCHEDVIEW_EXTENDER_TIMEOUT + 5.0,
                    period=period, limit=limit,
                    ignored_resources=frozenset(settings.SCHEDVIEW_STANDIN_IGNORED_RESOURCES),
                    watch_list=settings.SCHEDVIEW_WATCH_LIST).run(stop)
