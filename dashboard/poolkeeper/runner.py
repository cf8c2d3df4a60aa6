"""The pools process's parts and loop: the pool pods' reflector, a scheduler per pool
claiming over HTTP, the claim server on Redis, and the status it publishes.

    process = PoolsProcess(configuration, loop_client(settings.REDIS_URL))
    process.run(stop)        # until stop is set; then every pool shuts down and drains

Each loop turn serves the claim requests that came (waiting at most SERVE_WAIT) and,
every PUBLISH_INTERVAL, publishes every pool's status to Redis and, when something a
person would see changed (or reservations are counting down), pokes the pool panels
over the channel layer.
"""
import logging
import threading
import time

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from kubernetes import client

from warmpool import PoolScheduler

from dashboard.clients.pools_transport import ClaimServer
from dashboard.poolkeeper.claimer import ApiClaimer
from dashboard.poolkeeper.feed import PoolFeed, pool_reflector
from dashboard.poolkeeper.recent import RecentClaims
from dashboard.runtime.probes import Heartbeat
from dashboard.runtime.redis_outage import RedisBackoff
from dashboard.wire.keys import POOLS_GROUP, POOLS_STATUS
from dashboard.wire.live import pools_changed_message

log = logging.getLogger("pools")

SERVE_WAIT = 0.1         # seconds a turn waits for claim requests
PUBLISH_INTERVAL = 0.5   # seconds between status publications


def panel_fingerprint(statuses: dict) -> tuple:
    """What the panel shows, without the clocks: unchanged means no push is needed."""
    return tuple((pool, s["members"], s["idle_ready"], s["queue_length"],
                  s["claims_in_flight"], s["reserved"], s["metrics"]["latency"]["total"],
                  tuple(s["metrics"]["outcomes"].values()), tuple(s["ready_head"]))
                 for pool, s in sorted(statuses.items()))


class PoolsProcess:
    def __init__(self, configuration: client.Configuration, redis, *, capacity: int = 1024,
                 max_inflight: int = 32, reservation_ttl: float = 2.0,
                 idle_notify_delay: float = 0.2, layer=None):
        self.scheduler_options = {"capacity": capacity, "max_inflight": max_inflight,
                                  "reservation_ttl": reservation_ttl,
                                  "idle_notify_delay": idle_notify_delay}
        self.claimer = ApiClaimer(configuration)
        self.feed = PoolFeed(self._make_scheduler)
        self.stop = threading.Event()
        # Listed through the watch where the server offers it, as the owner's decoder lists.
        self.reflector = pool_reflector(client.CoreV1Api(client.ApiClient(configuration)),
                                        self.feed, self.stop,
                                        watch_list=settings.SCHEDVIEW_WATCH_LIST)
        self.claims = ClaimServer(lambda: dict(self.feed.schedulers), redis)
        self.redis = redis
        self.redis_backoff = RedisBackoff("pools")
        self.layer = layer
        self._shown = None
        self.statuses_shown = {}   # as last published: what /metrics reads
        self.heartbeat = Heartbeat("pools loop")
        self.recent = RecentClaims(settings.SCHEDVIEW_HEALTH_WINDOW)

    def _make_scheduler(self, pool, members) -> PoolScheduler:
        log.info("pool %s: scheduler started", pool)
        return PoolScheduler(pool, members, self.claimer, **self.scheduler_options).start()

    def run(self, stop: threading.Event) -> None:
        self.reflector.start()
        next_publish = 0.0
        try:
            while not stop.is_set():
                self.heartbeat.turned()
                # While Redis is unreachable the schedulers go on with the claims they
                # hold; serving and publishing resume at the backoff's pace.
                served = self.redis_backoff.attempt(self.claims.serve, SERVE_WAIT)[1]
                if not served and (self.redis_backoff.down or not self.feed.schedulers):
                    stop.wait(SERVE_WAIT)
                if time.monotonic() >= next_publish:
                    self.redis_backoff.attempt(self.publish)
                    next_publish = time.monotonic() + PUBLISH_INTERVAL
        finally:
            self.shutdown()

    def statuses(self) -> dict:
        return {pool: scheduler.status() for pool, scheduler in list(self.feed.schedulers.items())}

    def publish(self) -> None:
        statuses = self.statuses()
        for pool, recent in self.recent.figures(statuses).items():
            statuses[pool]["recent"] = recent    # what health judges (recent.py)
        self.statuses_shown = statuses
        self.claims.publish_status(statuses)
        shown = panel_fingerprint(statuses)
        counting_down = any(s["reservations"] for s in statuses.values())
        if shown != self._shown or counting_down:
            layer = self.layer or get_channel_layer()
            async_to_sync(layer.group_send)(POOLS_GROUP, pools_changed_message())
            self._shown = shown     # only once sent: a send Redis failed is sent again

    def shutdown(self) -> None:
        """Fail what waits ("no idle pods"), drain the claims in flight, stop watching."""
        self.stop.set()
        self.reflector.stop()
        for scheduler in list(self.feed.schedulers.values()):
            if not scheduler.shutdown(timeout=15):
                log.warning("pool %s: claims still in flight at shutdown", scheduler.pool)
        self.redis_backoff.attempt(self.redis.delete, POOLS_STATUS)
