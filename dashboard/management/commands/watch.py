"""`manage.py watch`: the cache owner (list + watch the cluster, serve commands, publish).

Several may run: one holds the leader lease and owns the cache, the others
wait and take over within seconds when it dies.
"""
import logging
import os
import signal
import socket
import threading

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from prometheus_client import REGISTRY

from dashboard.feed import runner
from dashboard.feed.commands import redis_client
from dashboard.feed.leader import LeaderLock
from dashboard.probes import Heartbeat, ProbeServer

log = logging.getLogger("dashboard.feed")


class Command(BaseCommand):
    help = "Own the scheduler cache: watch the cluster, serve commands, publish transitions."

    def add_arguments(self, parser):
        parser.add_argument("--id", default=f"{socket.gethostname()}:{os.getpid()}",
                            help="this instance's name in the leader lease")

    def handle(self, *args, **options):
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        redis = redis_client()
        probes = OwnerProbes()
        server = (ProbeServer(settings.SCHEDVIEW_PROBE_ADDRESS, probes.live, probes.ready).start()
                  if settings.SCHEDVIEW_PROBE_ADDRESS else None)
        lock = LeaderLock(redis, holder=options["id"])
        self.stdout.write(f"{options['id']}: waiting for the leader lease", ending="\n")
        self.stdout.flush()
        try:
            if not lock.acquire(stop):
                return
            self.stdout.write(f"{options['id']}: leader; owning the cache", ending="\n")
            self.stdout.flush()
            try:
                runner.run(stop, redis, lock, probes=probes)
            except runner.LeadershipLost as exc:
                raise CommandError(str(exc)) from None
            finally:
                lock.release()
        finally:
            probes.close()
            if server is not None:
                server.close()


class OwnerProbes:
    """What the owner's probes answer. Live: a standby waiting on the lease, or a leader
    whose loop turned within the last 10 s. Ready: only the leader with a synced cache,
    so a Service selecting ready owners routes kube-scheduler to the leader alone."""

    def __init__(self):
        self.heartbeat = Heartbeat("owner's loop")
        self.owner = None

    def lead(self, owner):
        self.owner = owner
        self.heartbeat.turned()
        REGISTRY.register(owner.metrics)

    def close(self):
        if self.owner is not None:
            REGISTRY.unregister(self.owner.metrics)

    def live(self) -> str | None:
        return self.heartbeat.cause() if self.owner is not None else None

    def ready(self) -> str | None:
        if self.owner is None:
            return "a standby: waiting for the leader lease"
        if not all(self.owner.synced.values()):
            return "leading, still listing the cluster"
        return self.heartbeat.cause()
