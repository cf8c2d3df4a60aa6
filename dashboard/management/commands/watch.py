"""`manage.py watch`: the cache owner (list + watch the cluster, serve commands, publish).

Several may run: one holds the leader lease and owns the cache, the others
wait and take over within seconds when it dies. None exits because Redis went away.
"""
import logging
import os
import signal
import socket
import threading
import time

from django import db
from django.conf import settings
from django.core.management.base import BaseCommand
from prometheus_client import REGISTRY
from redis.backoff import ExponentialWithJitterBackoff

from dashboard.owner import runner
from dashboard.owner.cache_dump import DumpSignal
from dashboard.owner.decoder import warm_up
from dashboard.owner.leader import LeaderLease
from dashboard.runtime.probes import Heartbeat, ProbeServer
from dashboard.runtime.redis_outage import UNREACHABLE, loop_client

log = logging.getLogger("owner")

RESTART_PAUSE_CAP = 60.0   # seconds: the longest pause after failures in a row


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
        # kill -USR2 logs the cache's summary, as kube-scheduler's debugger does
        dump_signal = DumpSignal().install()
        redis = loop_client(settings.REDIS_URL)
        lease = LeaderLease(redis, holder=options["id"])
        probes = OwnerProbes()
        server = (ProbeServer(settings.SCHEDVIEW_PROBE_ADDRESS, probes.live, probes.ready).start()
                  if settings.SCHEDVIEW_PROBE_ADDRESS else None)
        warm_up()   # a standby forks its decoder's server now, so taking over is quick
        try:
            self.own_while_leading(stop, redis, lease, probes, options["id"], dump_signal)
        finally:
            if server is not None:
                server.close()

    def own_while_leading(self, stop, redis, lease, probes, name, dump_signal=None):
        """A lost lease or a Redis outage at the wrong moment sends this owner back to
        standing by, never out: it stops only when told to.

        An owner that fails (Redis or the database failing while it starts or stops)
        gives the lease back and pauses before contending again, at least a renewal
        period and longer after each failure in a row, so that a healthy standby, which
        looks every half second, takes the lease instead of it."""
        backoff = ExponentialWithJitterBackoff(cap=RESTART_PAUSE_CAP, base=lease.retry)
        failures = 0
        while not stop.is_set():
            self.say(f"{name}: waiting for the leader lease")
            if not lease.wait(stop):
                return
            self.say(f"{name}: leader; owning the cache (term {lease.term})")
            led_from, failed = time.monotonic(), None
            # Renewed from a thread of its own from the moment it is held: building the
            # owner and starting its decoder outlived the lease on a loaded machine, and
            # the standby took over at every start (issue 26).
            lease.start_renewing()
            db.close_old_connections()      # one broken while standing by is opened anew
            try:
                runner.run(stop, redis, lease, probes=probes, dump_signal=dump_signal)
            except runner.LeadershipLost as exc:
                log.warning("%s", exc)
            except (*UNREACHABLE, db.Error) as exc:
                failed = exc
            finally:
                lease.stop_renewing()
                probes.stand_by()
                lease.release()
            if failed is None:
                failures = 0
                continue
            # A connection the failure broke is closed here, and reopened by its next use.
            db.connections.close_all()
            failures = 1 if time.monotonic() - led_from > lease.duration else failures + 1
            pause = max(lease.retry, backoff.compute(failures))
            log.warning("the cache owner failed on %s: %s; lease given back, standing by "
                        "in %.1f s", type(failed).__name__, failed, pause)
            stop.wait(pause)

    def say(self, line):
        self.stdout.write(line, ending="\n")
        self.stdout.flush()


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

    def stand_by(self):
        if self.owner is not None:
            REGISTRY.unregister(self.owner.metrics)
            self.owner = None

    def live(self) -> str | None:
        return self.heartbeat.cause() if self.owner is not None else None

    def ready(self) -> str | None:
        if self.owner is None:
            return "a standby: waiting for the leader lease"
        if not all(self.owner.synced.values()):
            return "leading, still listing the cluster"
        return self.heartbeat.cause()
