"""`manage.py watch`: the cache owner (list + watch the cluster, serve commands, publish).

Several may run: one holds the leader lease and owns the cache, the others
wait and take over within seconds when it dies.
"""
import logging
import os
import signal
import socket
import threading

from django.core.management.base import BaseCommand, CommandError

from dashboard.feed import runner
from dashboard.feed.commands import redis_client
from dashboard.feed.decoder import warm_up
from dashboard.feed.leader import LeaderLock

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
        lock = LeaderLock(redis, holder=options["id"])
        warm_up()
        self.stdout.write(f"{options['id']}: waiting for the leader lease", ending="\n")
        self.stdout.flush()
        if not lock.acquire(stop):
            return
        self.stdout.write(f"{options['id']}: leader; owning the cache", ending="\n")
        self.stdout.flush()
        try:
            runner.run(stop, redis, lock)
        except runner.LeadershipLost as exc:
            raise CommandError(str(exc)) from None
        finally:
            lock.release()
