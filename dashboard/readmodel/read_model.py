"""What the pages show, from the read model, as plain values the templates print.

Why: the cache lives in the owner process (`manage.py watch`), which writes
it into the database in batches (PodRecord, NodeRecord, Transition,
SnapshotSample, ComparerRun) and its live counters into Redis (OWNER_STATUS).
This is the one module that reads them for display: templates can neither
do arithmetic nor call methods with arguments, and the pages and their htmx
fragments must print the same values.

Every count and sum is an SQL aggregate (Count, Sum, group by): nothing here
loops over all pods, and the only loops over all nodes are the zones page's
list of names. The nodes and zones pages are `dashboard.web.nodes.reads`'s, the pods
list is `dashboard.web.pods.query`'s.
"""
import time
from dataclasses import dataclass, field
from datetime import timedelta

import orjson
import redis
from django.conf import settings
from django.db.models import Count, Max, Min, Q, Sum
from django.utils import timezone

from dashboard.models import (
    ComparerRun,
    HealthSample,
    NodeRecord,
    PodState,
    PodStateCount,
    SnapshotSample,
    Transition,
    ZoneTotal,
)
from dashboard.runtime import supervised
from dashboard.wire.clients import redis_client
from dashboard.wire.keys import OWNER_STATUS, OWNER_STATUS_TTL
from dashboard.wire.tasks import QUEUE as CELERY_QUEUE

MIB = 1024**2
GIB = 1024**3
NODES_PER_PAGE = 200    # the nodes page's and the REST list's
# The highest page number a list takes: past any count of rows, with an offset that still
# fits the 64-bit numbers of SQL and of the owner's JSON commands.
MAX_PAGE = 1_000_000
RECENT = timedelta(minutes=5)   # "expired/forgotten in the last 5 minutes"
STATES = [state.value for state in PodState]  # Pending, Assumed, Added, Expired, Forgotten


# --- small values ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Usage:
    """Requested against allocatable, for one resource; `non_zero` is the scheduler's
    non-zero requested (a container without a request counts 100m cpu / 200Mi memory)."""
    requested: float
    allocatable: float
    unit: str
    non_zero: float | None = None
    digits: int = 1     # decimals printed: 0 for things counted (pods, GPUs)

    @property
    def percent(self) -> int:
        return _percent(self.requested, self.allocatable)

    @property
    def percent_text(self) -> str:
        """The share as printed: requests on a node with none of the resource allocatable
        (a GPU pod forced onto a CPU node) are an over-commit, not 0 %."""
        if not self.allocatable and self.requested:
            return "over-commit: none allocatable"
        return f"{self.percent}%"

    @property
    def non_zero_percent(self) -> int:
        return _percent(self.non_zero or 0, self.allocatable)

    @property
    def shown(self) -> int:
        """The requested bar's length in percent (a bar stops at its track's end)."""
        return min(100, self.percent) if self.allocatable else (100 if self.requested else 0)

    @property
    def non_zero_shown(self) -> int:
        return min(100, self.non_zero_percent) if self.allocatable else (
            100 if self.non_zero else 0)

    @property
    def over(self) -> bool:
        """More requested than allocatable (a deleted node's pods, or an over-commit)."""
        return self.requested > self.allocatable

    @property
    def text(self) -> str:
        return (f"{self.requested:,.{self.digits}f} / {self.allocatable:,.{self.digits}f} "
                f"{self.unit}")

    @property
    def non_zero_text(self) -> str:
        return f"{self.non_zero:,.{self.digits}f}" if self.non_zero is not None else ""


def _percent(part, whole) -> int:
    return round(100 * part / whole) if whole else 0


def cpu(requested_milli, allocatable_milli, non_zero_milli=None) -> Usage:
    return Usage((requested_milli or 0) / 1000, (allocatable_milli or 0) / 1000, "cores",
                 None if non_zero_milli is None else non_zero_milli / 1000)


def memory(requested_bytes, allocatable_bytes, non_zero_bytes=None) -> Usage:
    return Usage((requested_bytes or 0) / GIB, (allocatable_bytes or 0) / GIB, "GiB",
                 None if non_zero_bytes is None else non_zero_bytes / GIB)


def cpu_text(milli: int) -> str:
    """CPU as every page writes it: in cores, as the node gauges count them ("0.25 cores",
    "1 core", "1,200 cores"); "" for none."""
    if not milli:
        return ""
    cores = f"{milli / 1000:,.3f}".rstrip("0").rstrip(".")
    return f"{cores} core{'' if milli == 1000 else 's'}"


def memory_text(amount: int) -> str:
    """A pod's memory in MiB, with thousands separators; "" for none."""
    return f"{amount / MIB:,.0f} MiB" if amount else ""


def window_text(seconds: float) -> str:
    """A window of time as the figures counted over it name it: "the last minute", "the
    last 5 minutes", "the last 8 s"."""
    if seconds == 60:
        return "the last minute"
    if seconds >= 120 and seconds % 60 == 0:
        return f"the last {seconds / 60:.0f} minutes"
    return f"the last {seconds:g} s"


def ago(seconds: float) -> str:
    """How long ago, as people say it: "3 s ago", "4 min ago", "2 h ago"."""
    seconds = max(0, seconds)
    if seconds < 90:
        return f"{seconds:.0f} s ago"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min ago"
    return f"{seconds / 3600:.0f} h ago"


def _since(moment) -> str:
    return ago((timezone.now() - moment).total_seconds())


TOTALS = ("nodes", "missing", "cpu_requested", "cpu_allocatable", "memory_requested",
          "memory_allocatable")


def node_totals() -> dict:
    """Every node summed (TOTALS -> int), from the zones' totals NodeRecord's triggers keep
    (ZoneTotal): a row a zone, however many nodes."""
    sums = ZoneTotal.objects.aggregate(**{name: Sum(name) for name in TOTALS})
    return {name: value or 0 for name, value in sums.items()}


def usages(sums: dict) -> tuple[Usage, Usage]:
    return (cpu(sums["cpu_requested"], sums["cpu_allocatable"]),
            memory(sums["memory_requested"], sums["memory_allocatable"]))


# --- pods by state --------------------------------------------------------------------------
@dataclass(frozen=True)
class PodCounts:
    pending: int = 0
    assumed: int = 0
    binding_finished: int = 0   # of the assumed ones: bind call returned, expiry clock running
    added: int = 0
    expired: int = 0
    forgotten: int = 0

    @property
    def total(self) -> int:
        return self.pending + self.assumed + self.added + self.expired + self.forgotten

    @property
    def by_state(self) -> list[tuple[str, int]]:
        """(state, count) in the state machine's order, for filters and cards."""
        return [(state, getattr(self, state.lower())) for state in STATES]


def pod_counts() -> PodCounts:
    """The pods by state, from the counts PodRecord's triggers keep (PodStateCount): a few
    rows, however many pods."""
    counts, finished = {}, 0
    for state, binding_finished, n in PodStateCount.objects.filter(n__gt=0).values_list(
            "state", "binding_finished", "n"):
        if state in STATES:
            counts[state.lower()] = counts.get(state.lower(), 0) + n
            if binding_finished and state == PodState.ASSUMED:
                finished = n
    return PodCounts(binding_finished=finished, **counts)


@dataclass(frozen=True)
class RecentOutcomes:
    expired: int
    forgotten: int
    minutes: int
    # When the first counted one happened (None: none did): where the Events page's window
    # of each number begins. Taken from the rows, not the clock, so a number and its link
    # agree and two renders of the same history are the same page.
    first_expired: object = None
    first_forgotten: object = None


def recent_outcomes() -> RecentOutcomes:
    """Pods expired or forgotten in the last RECENT, from the history (one range query)."""
    rows = (Transition.objects.order_by()
            .filter(at__gte=timezone.now() - RECENT, kind__in=["pod_expired", "pod_forgotten"])
            .values("kind").annotate(n=Count("*"), first=Min("at")))
    counts = {row["kind"]: row for row in rows}
    expired, forgotten = counts.get("pod_expired", {}), counts.get("pod_forgotten", {})
    return RecentOutcomes(expired.get("n", 0), forgotten.get("n", 0),
                          int(RECENT.total_seconds() // 60),
                          expired.get("first"), forgotten.get("first"))


@dataclass(frozen=True)
class BindFailure:
    """A pod forgotten because its bind failed, and why (the API server's answer)."""
    at: object              # datetime
    uid: str
    namespace: str
    name: str
    node: str
    cause: str              # bind, extender, bind deadline
    detail: str


@dataclass(frozen=True)
class BindHealth:
    """The bind path: Celery's queue in Redis, and how the binds of the health window ended
    (pods bound, and pods forgotten because their bind failed or never finished): the one
    bind-failure figure, which the banner, the health panel and the binds panel all show,
    and the window's latest failures with their causes (where the banner's "see why" leads)."""
    queued: int | None      # tasks waiting in Celery's queue; None when Redis did not answer
    finished: int
    failed: int
    window: float           # seconds: SCHEDVIEW_HEALTH_WINDOW
    latest_failures: tuple = ()   # BindFailure, newest first

    @property
    def window_text(self) -> str:
        return window_text(self.window)

    @property
    def outcomes(self) -> int:
        return self.finished + self.failed

    @property
    def failure_percent(self) -> int:
        return _percent(self.failed, self.outcomes)


def bind_queue_depth() -> int | None:
    """Tasks waiting in Celery's default queue (a Redis list on the broker): binds, and
    the reaper's and comparer's runs that share it."""
    try:
        return redis_client(settings.REDIS_URL).llen(CELERY_QUEUE)
    except redis.RedisError:
        return None


# Forgets that are bind failures: the bind task's, kube-scheduler's bind refused through the
# extender, and the bind deadline (an operator's forget is not one).
BIND_FAILURE_CAUSES = ("bind", "extender", "bind deadline")


def bind_outcomes(start, end=None) -> tuple[int, int]:
    """(bound, failed) pods from `start` (to `end`), each pod once per outcome, whichever
    event told it first: a real API server's watch usually confirms a bound pod before the
    binder reports back, and the binder's finish then changes nothing, so "binding
    finished" alone undercounts the successes."""
    rows = Transition.objects.order_by().filter(at__gte=start)
    if end is not None:
        rows = rows.filter(at__lt=end)
    return bind_outcomes_of(rows)


def bind_outcomes_of(rows) -> tuple[int, int]:
    """(bound, failed) pods among these transitions, as `bind_outcomes` counts them."""
    counts = rows.aggregate(
        bound=Count("key", distinct=True,
                    filter=Q(kind="pod_binding_finished")
                    | Q(kind="pod_confirmed", from_state="Assumed")),
        failed=Count("key", distinct=True,
                     filter=Q(kind="pod_forgotten", cause__in=BIND_FAILURE_CAUSES)))
    return counts["bound"], counts["failed"]


def sampled_bind_outcomes(since) -> tuple[int, int]:
    """(finished, failed) binds since `since`, from the health samples: beat counted the
    history's rows of each sample's seconds once (bind_outcomes), when it took the sample."""
    sums = HealthSample.objects.filter(at__gt=since).aggregate(
        binds=Sum("binds", default=0), failures=Sum("bind_failures", default=0))
    return sums["binds"], sums["failures"]


def bind_failures(now=None, window: float | None = None) -> tuple[int, int, float]:
    """(finished, failed, window in seconds): the binds ended in the health window."""
    window = settings.SCHEDVIEW_HEALTH_WINDOW if window is None else window
    finished, failed = sampled_bind_outcomes((now or timezone.now()) - timedelta(seconds=window))
    return finished, failed, window


LATEST_BIND_FAILURES = 5


def latest_bind_failures(since, limit: int = LATEST_BIND_FAILURES) -> tuple:
    """The newest pods forgotten since `since` because their bind failed, with why; bounded
    by time (the `at` index) so a history of quiet months is not scanned for them."""
    rows = (Transition.objects.filter(at__gte=since, kind="pod_forgotten",
                                      cause__in=BIND_FAILURE_CAUSES)
            .order_by("-seq").values_list("at", "key", "namespace", "name", "node", "cause",
                                          "detail")[:limit])
    return tuple(BindFailure(*row) for row in rows)


def bind_health(now=None) -> BindHealth:
    finished, failed, window = bind_failures(now)
    since = (now or timezone.now()) - timedelta(seconds=window)
    return BindHealth(bind_queue_depth(), finished, failed, window,
                      latest_bind_failures(since) if failed else ())


# --- the owner ------------------------------------------------------------------------------
@dataclass(frozen=True)
class OwnerStatus:
    """The owner's live counters from Redis. state: "live", "stale" (written longer ago
    than status_stale_after(): its owner stopped), "absent" (no owner wrote them in the
    last dashboard.wire.keys.OWNER_STATUS_TTL seconds) or "unreachable" (Redis did not
    answer)."""
    state: str
    counters: dict = field(default_factory=dict)
    error: str = ""
    age: float = 0.0   # seconds since the owner wrote them

    @property
    def live(self) -> bool:
        return self.state == "live"

    @property
    def gone(self) -> bool:
        """No owner reports now (Redis answered): none wrote, or the one that did stopped."""
        return self.state in ("absent", "stale")

    @property
    def synced(self) -> bool:
        return bool(self.counters.get("synced"))

    @property
    def seq(self):
        return self.counters.get("seq")

    @property
    def pending(self):
        """Pods waiting for a node: the owner's unbound pods less those it assumed (an
        assumed pod stays unbound in the cluster until the watch sees its binding)."""
        pending = self.counters.get("pending")
        return None if pending is None else max(0, pending - self.counters.get("assumed", 0))

    @property
    def pending_top(self) -> list:
        """The reasons most pending pods wait for, most first: [{reason, pods, summary}]
        (dashboard/owner/pending_reasons.py; [] before the owner's first sweep ends)."""
        return self.counters.get("pending_top") or []

    @property
    def feed_backlog(self):
        return self.counters.get("feed_backlog")

    @property
    def feed_lag(self):
        """Seconds the cache is behind the watch events received (dashboard/owner/feed_lag.py)."""
        return self.counters.get("feed_lag")

    @property
    def read_model_backlog(self):
        """Changes these pages do not show yet (rows to build, batches to write)."""
        return self.counters.get("read_model_backlog")

    @property
    def write_waiting(self):
        """Seconds the owner's database write in progress has taken (0: none)."""
        return self.counters.get("write_waiting")

    @property
    def generation(self):
        return self.counters.get("generation")

    @property
    def reported(self) -> str:
        at = self.counters.get("at")
        return ago(time.time() - at) if at else ""


def status_stale_after() -> float:
    """Seconds past which the owner's status is from an owner that stopped: a leader
    writes it every flush (0.1 s) and renews its lease every SCHEDVIEW_LEASE_RETRY_PERIOD,
    so a status older than half again that period outlived its writer (a kill -9 or a
    hang; issue 22: health said "Leading and synced" for 5 s after a kill -9)."""
    return 1.5 * settings.SCHEDVIEW_LEASE_RETRY_PERIOD


def owner_status() -> OwnerStatus:
    """The status and its age as Redis counts it (from the key's remaining time to live,
    so the web's and the owner's clocks need not agree)."""
    try:
        pipe = redis_client(settings.REDIS_URL).pipeline(transaction=False)
        raw, remaining_ms = pipe.get(OWNER_STATUS).pttl(OWNER_STATUS).execute()
    except redis.RedisError as exc:
        return OwnerStatus("unreachable", error=str(exc))
    if raw is None:
        return OwnerStatus("absent")
    try:
        counters = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return OwnerStatus("unreachable", error=f"unreadable status: {exc}")
    age = OWNER_STATUS_TTL - remaining_ms / 1000 if remaining_ms >= 0 else 0.0
    if age > status_stale_after():
        return OwnerStatus("stale", counters, age=round(age, 1))
    return OwnerStatus("live", counters, age=round(age, 1))


# --- snapshot and comparer ------------------------------------------------------------------
@dataclass(frozen=True)
class SnapshotLag:
    generation: int        # the latest snapshot's
    taken: str             # how long ago
    cache_generation: int  # the owner's now, else the newest generation in the read model
    cache_source: str      # "live" or "read model"

    @property
    def behind(self) -> int:
        return max(0, self.cache_generation - self.generation)


def snapshot_lag(owner: OwnerStatus) -> SnapshotLag | None:
    sample = SnapshotSample.objects.order_by("-at", "-id").only("at", "generation").first()
    if sample is None:
        return None
    if owner.live and owner.generation is not None:
        cache_generation, source = owner.generation, "live"
    else:
        cache_generation = NodeRecord.objects.aggregate(g=Max("generation"))["g"] or 0
        source = "read model"
    return SnapshotLag(sample.generation, _since(sample.at), cache_generation, source)


DRIFT = [("overdue_binds", "assumed pods past the stuck time, never bound"),
         ("missed_pods", "missed pods"), ("redundant_pods", "redundant pods"),
         ("wrong_node_pods", "pods on the wrong node"), ("stale_pods", "stale pods"),
         ("missed_nodes", "missed nodes"), ("redundant_nodes", "redundant nodes"),
         ("stale_nodes", "stale nodes"), ("aggregate_mismatches", "aggregate mismatches"),
         # the owner's pending pods against the lists (dashboard/owner/drift_repair.py)
         ("pending_missed", "pending pods missed"),
         ("pending_redundant", "pending pods gone from the cluster"),
         ("pending_stale", "stale pending pods"),
         # the pages' own rows against the cache (dashboard/owner/row_drift.py)
         ("rows_missing", "rows missing from the pages"),
         ("rows_extra", "rows of what the cache no longer holds"),
         ("rows_stale", "rows behind the cache")]
NOT_DRIFT = [("ghost_nodes", "nodes deleted with pods left"),
             ("unconfirmed_assumed", "assumed pods not bound yet")]


@dataclass(frozen=True)
class ComparerResult:
    """The last attempt at a comparison, and when the cache was last found clean."""
    clean: bool
    when: str
    at: object
    drift: list[tuple[str, int]]    # (what, how many), non-zero only
    states: list[tuple[str, int]]   # ghosts and unconfirmed assumed pods: states, not drift
    error: str                      # why the attempt could not compare ("" when it did)
    last_clean: str | None          # how long ago the latest clean comparison was, if any
    last_clean_at: object


def last_clean(run: ComparerRun) -> ComparerRun | None:
    """The latest clean comparison, `run` itself when it is clean (no query then)."""
    return run if run.clean else (ComparerRun.objects.filter(clean=True)
                                  .order_by("-at", "-id").only("at").first())


def latest_comparison() -> ComparerResult | None:
    run = ComparerRun.objects.order_by("-at", "-id").first()
    if run is None:
        return None
    clean = last_clean(run)

    def counted(fields):
        return [(label, len(run.report.get(key) or ())) for key, label in fields
                if run.report.get(key)]
    return ComparerResult(run.clean, _since(run.at), run.at, counted(DRIFT), counted(NOT_DRIFT),
                          run.error, _since(clean.at) if clean else None,
                          clean.at if clean else None)


# --- pages ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Overview:
    pods: PodCounts
    recent: RecentOutcomes
    nodes: int
    missing_nodes: int          # NodeInfos whose node was deleted with pods left
    owner: OwnerStatus
    snapshot: SnapshotLag | None
    comparison: ComparerResult | None
    cpu: Usage
    memory: Usage
    binds: BindHealth
    processes: supervised.Processes


def overview(owner: OwnerStatus | None = None) -> Overview:
    owner = owner or owner_status()
    nodes = node_totals()
    cpu_usage, memory_usage = usages(nodes)
    return Overview(pods=pod_counts(), recent=recent_outcomes(), nodes=nodes["nodes"],
                    missing_nodes=nodes["missing"], owner=owner, snapshot=snapshot_lag(owner),
                    comparison=latest_comparison(), cpu=cpu_usage, memory=memory_usage,
                    binds=bind_health(),
                    processes=supervised.processes(redis_client(settings.REDIS_URL)))
