"""Is the scheduler healthy? One model of it: checks, each ok, warn or fail, with a line
saying why and a link to the cause.

Why one module: the banner on every page, the overview's health panel, `GET
/api/v1/health`, the samples behind the charts and the web's /metrics all judge the
same way. Each check is a plain function of the figures passed in (unit-tested with
made-up figures); `gather()` reads those figures (the owner's status in Redis, the
pools' status, a few indexed queries: nothing per pod) and judges them.

The thresholds are settings (SCHEDVIEW_HEALTH_*, see the README), most a "warn,fail"
pair.
"""
import hashlib
import time
from concurrent.futures import ThreadPoolExecutor, TimeoutError as FutureTimeout
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from urllib.parse import urlencode

import redis
from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.db.models import Count, Max, Min
from django.urls import reverse
from django.utils import timezone

from dashboard.clients.pools_transport import read_status as read_pools_status
from dashboard.models import ComparerRun, HealthSample, PodRecord, PodState, Transition
from dashboard.runtime.db_deadline import DATABASE_ERRORS, NoAnswer, bounded
from dashboard.runtime.weather import Weather, injected
from dashboard.wire.clients import redis_client
from dashboard.readmodel.read_model import (
    OwnerStatus,
    ago,
    bind_failures,
    bind_outcomes_of,
    owner_status,
    pod_counts,
    window_text,
)

OK, WARN, FAIL = "ok", "warn", "fail"
_RANK = {OK: 0, WARN: 1, FAIL: 2}
REACH_TIMEOUT = 1.0      # seconds Redis has to answer a probe
# Seconds the database has, in all, for a health judgement's queries (the probe's, then the
# checks' that read it): health answers within about this, whatever the database does.
DATABASE_TIMEOUT = 2.0
WRITE_WAIT = 5.0         # seconds an owner's database write may take before health warns
SHARED_FOR = 2.0         # seconds a process's pages share one judgement (current())
CURRENT_KEY = "schedview:health"   # ... under this key of the process's local cache
# Transitions that are scheduling progress: a pod assumed by the extender, or bound by
# a scheduler that does not assume through us (the watch adds it to the cache).
PROGRESS_KINDS = ("pod_assumed", "pod_added")
# Every check's name, in the order they are judged.
CHECKS = ("redis", "database", "owner", "feed", "read_model", "scheduling", "binds_stuck",
          "comparer", "bind_failures", "samples", "pools")
STALE_SAMPLES = 3        # sampling periods without a sample: Celery beat is not running
MIN_BIND_OUTCOMES = 10   # fewer binds ended in the window: too few to judge a rate
MIN_POOL_CLAIMS = 10     # fewer claims ended in the window: too few to judge expiries


@dataclass(frozen=True)
class Check:
    name: str       # what is checked: owner, feed, read_model, scheduling, ...
    title: str      # as people say it
    level: str      # ok, warn or fail
    message: str    # one line: what is wrong, or that it is fine
    link: str = ""  # the page (or pod) where the cause shows

    @property
    def ok(self) -> bool:
        return self.level == OK


@dataclass(frozen=True)
class Health:
    checks: tuple[Check, ...]
    at: float   # epoch seconds it was judged
    # The feed's figures as the owner reported them (None: no live owner reports them).
    feed_backlog: int | None = None   # decoder messages queued for the owner
    feed_lag: float | None = None     # seconds the cache is behind the events received
    # The simulated cluster's fault episodes, when `manage.py up` runs one: the pages say
    # which warnings it causes on purpose (dashboard/runtime/weather.py).
    injected: Weather | None = None

    @property
    def level(self) -> str:
        return max((check.level for check in self.checks), key=_RANK.__getitem__, default=OK)

    @property
    def problems(self) -> list[Check]:
        """The checks not ok, failures first."""
        return sorted((c for c in self.checks if not c.ok), key=lambda c: -_RANK[c.level])

    @property
    def banner_digest(self) -> str:
        """A short digest of what the banner shows: the page polls with it and is answered
        204 while it holds (a banner drawn anew every poll could swallow a click on it)."""
        now = self.injected.now.as_dict() if self.injected and self.injected.now else None
        shown = [(c.level, c.title, c.message, c.link) for c in self.problems], now
        return hashlib.blake2b(repr(shown).encode(), digest_size=8).hexdigest()

    def as_dict(self) -> dict:
        return {"level": self.level, "at": self.at,
                "feed": {"backlog": self.feed_backlog, "lag_seconds": self.feed_lag},
                "checks": [asdict(check) for check in self.checks],
                "injected": None if self.injected is None else self.injected.as_dict()}


@dataclass(frozen=True)
class Thresholds:
    feed_backlog: tuple[float, float]
    feed_lag: tuple[float, float]        # seconds
    read_model_backlog: tuple[float, float]
    stuck_binds: tuple[float, float]
    bind_failures: tuple[float, float]   # percent
    pool_queue: tuple[float, float]      # percent of capacity
    window: float                        # seconds
    comparer_stale: float                # seconds
    pool_wait: tuple[float, float] = (1.0, 5.0)        # seconds: a pool's p99 claim wait
    pool_expired: tuple[float, float] = (10.0, 30.0)   # percent of its claims that expired

    @classmethod
    def from_settings(cls) -> "Thresholds":
        return cls(settings.SCHEDVIEW_HEALTH_FEED_BACKLOG, settings.SCHEDVIEW_HEALTH_FEED_LAG,
                   settings.SCHEDVIEW_HEALTH_READ_MODEL_BACKLOG,
                   settings.SCHEDVIEW_HEALTH_STUCK_BINDS, settings.SCHEDVIEW_HEALTH_BIND_FAILURES,
                   settings.SCHEDVIEW_HEALTH_POOL_QUEUE, settings.SCHEDVIEW_HEALTH_WINDOW,
                   settings.SCHEDVIEW_HEALTH_COMPARER_STALE, settings.SCHEDVIEW_HEALTH_POOL_WAIT,
                   settings.SCHEDVIEW_HEALTH_POOL_EXPIRED)


def graded(value: float, pair: tuple[float, float]) -> str:
    warn, fail = pair
    return FAIL if value >= fail else WARN if value >= warn else OK


def _pod_link(uid: str | None, fallback: str) -> str:
    return reverse("pod-detail", args=[uid]) if uid else fallback


def _overview(anchor: str) -> str:
    return f"{reverse('overview')}#{anchor}"


# --- the checks, each a function of the figures passed in ----------------------------------
def owner_check(owner: OwnerStatus) -> Check:
    link = _overview("owner-status")
    if owner.state == "unreachable":
        return Check("owner", "Cache owner", FAIL,
                     f"Owner status unknown: Redis did not answer ({owner.error})", link)
    if owner.state == "stale":
        return Check("owner", "Cache owner", FAIL,
                     f"The cache owner's last report is {owner.age:,.0f} s old: it stopped "
                     "(killed or hung); a standby takes the lease once it expires", link)
    if not owner.live:
        return Check("owner", "Cache owner", FAIL,
                     "No cache owner has reported in the last 10 s: is `manage.py watch` "
                     "running and leading?", link)
    if not owner.synced:
        return Check("owner", "Cache owner", WARN, "The owner leads but is still listing the "
                     "cluster: the cache is incomplete", link)
    refused = owner.counters.get("extender_refused")
    if refused:
        return Check("owner", "Cache owner", WARN, "Leading and synced, but not serving "
                     f"kube-scheduler's extender: {refused}", link)
    return Check("owner", "Cache owner", OK, f"Leading and synced (reported {owner.reported})",
                 link)


def _backlog_check(name: str, title: str, owner: OwnerStatus, backlog, pair, behind: str,
                   fine: str) -> Check:
    """A backlog the owner reports, graded; `behind` and `fine` are "{:,}" formats."""
    link = _overview("owner-status")
    if not owner.live or backlog is None:
        return Check(name, title, OK, "No owner reports it", link)
    level = graded(backlog, pair)
    return Check(name, title, level, (behind if level != OK else fine).format(backlog), link)


def feed_check(owner: OwnerStatus, thresholds: Thresholds) -> Check:
    """Graded by the worse of the backlog (decoder messages) and the lag (seconds): a few slow
    events show in the lag, a flood the owner applies quickly in the backlog. A silent
    watch warns on its own: with nothing received there is no lag (issue 22)."""
    link = _overview("owner-status")
    backlog, lag = owner.feed_backlog, owner.feed_lag
    if not owner.live or backlog is None:
        return Check("feed", "Watch feed", OK, "No owner reports it", link)
    level = max(graded(backlog, thresholds.feed_backlog),
                graded(lag or 0, thresholds.feed_lag), key=_RANK.__getitem__)
    silent = silent_watches(owner)
    claims = claims_note(owner)
    if level == OK and not silent:
        behind = "" if lag is None else f"{lag:,.1f} s behind, "
        return Check("feed", "Watch feed", OK, f"Keeping up ({behind}{backlog:,} waiting)"
                                               f"{'; ' if claims else ''}{claims}", link)
    parts = []
    if level != OK and lag is None:   # an owner that does not report its lag
        parts.append(f"{backlog:,} watch events wait to be applied to the cache")
    elif level != OK:
        parts.append(f"The cache is {lag:,.1f} s behind the watch ({backlog:,} events wait "
                     "to be applied)")
    if silent:
        level = max(level, WARN, key=_RANK.__getitem__)
        parts.append("Watch silent for " + ", ".join(f"{seconds:,.0f} s ({kind})"
                                                    for kind, seconds in silent))
    if claims:
        parts.append(claims)
    return Check("feed", "Watch feed", level, "; ".join(parts), link)


def claims_note(owner: OwnerStatus) -> str:
    """What the owner's claims watch adds to the feed's line ("" from an owner that does not
    say). Never a warning: a role without persistentvolumeclaims is a choice the owner runs
    with (pods' claims are then named unchecked on their diagnosis), not a fault."""
    claims = owner.counters.get("claims")
    if not claims:
        return ""
    if claims.get("denied"):
        return ("claims unchecked: the API server forbids listing persistentvolumeclaims "
                "(HTTP 403)")
    if not claims.get("known"):
        return "claims not listed yet"
    count = claims.get("count", 0)
    return f"{count:,} claim{'s' if count != 1 else ''}"


def silent_watches(owner: OwnerStatus) -> list[tuple[str, float]]:
    """(kind, seconds) of the watches the API server has said nothing to (no event, no
    bookmark) for the owner's bound (SCHEDVIEW_WATCH_SILENCE, past which it restarts
    them). Not earlier: a real API server's quiet watch gets a bookmark only about every
    minute (capture 55), so a shorter silence is no sign of trouble."""
    bound = owner.counters.get("watch_silence")
    silent = owner.counters.get("watch_silent") or {}
    if not bound:
        return []
    return sorted((kind, seconds) for kind, seconds in silent.items() if seconds >= bound)


def read_model_check(owner: OwnerStatus, thresholds: Thresholds) -> Check:
    """The backlog, graded; and a write that has waited on the database past WRITE_WAIT
    warns at least, whatever the backlog: the owner goes on meanwhile and the changes
    merge in its writer's queue, so the backlog alone can look small (issue 22)."""
    check = _backlog_check("read_model", "Pages' data", owner, owner.read_model_backlog,
                           thresholds.read_model_backlog,
                           "{:,} changes are not on these pages yet: the database writes lag",
                           "Up to date ({:,} changes being written)")
    waiting = (owner.write_waiting or 0) if owner.live else 0
    if waiting < WRITE_WAIT:
        return check
    message = (f"A database write has waited {waiting:,.0f} s: is the database answering? "
               f"{owner.read_model_backlog or 0:,} changes are not on these pages yet")
    return Check(check.name, check.title, max(check.level, WARN, key=_RANK.__getitem__),
                 message, check.link)


@dataclass(frozen=True)
class SchedulingProgress:
    pending: int | None        # pending pods now (None: unknown)
    pending_then: int | None   # at the start of the window, from the samples
    progressed: bool           # any pod assumed or bound within the window
    oldest_pending: str | None  # its uid, the pod to look at
    window: float              # seconds
    top_reason: dict | None = None  # the reason most pods wait for: {reason, pods, summary}


def scheduling_check(progress: SchedulingProgress) -> Check:
    """Stalled: pending grew over the window while no pod was assumed or bound. Then the
    reason most pods wait for is named, in kube-scheduler's words, and linked (the Pending
    page filtered by it): the cause, where the oldest pod is only one example of it."""
    link = _pod_link(progress.oldest_pending, f"{reverse('pods')}?state=Pending")
    window = ago(progress.window).removesuffix(" ago")
    if progress.pending is None:
        return Check("scheduling", "Scheduling", OK, "Pending pods unknown", link)
    if progress.progressed or not progress.pending:
        return Check("scheduling", "Scheduling", OK,
                     f"Progressing ({progress.pending:,} pending)", link)
    if progress.pending_then is not None and progress.pending > progress.pending_then:
        message = (f"Stalled: pending grew {progress.pending_then:,} -> {progress.pending:,} "
                   f"in {window} and no pod was assumed or bound")
        top = progress.top_reason
        if top:
            pods = top["pods"]
            message += (f"; most wait for: {top['summary'] or top['reason']} "
                        f"({pods:,} pod{'s' if pods != 1 else ''})")
            link = f"{reverse('pending')}?{urlencode({'reason': top['reason']})}"
        return Check("scheduling", "Scheduling", FAIL, message, link)
    return Check("scheduling", "Scheduling", OK,
                 f"{progress.pending:,} pending, none placed in {window}, not growing", link)


def stuck_binds_check(stuck: int | None, oldest_stuck: str | None,
                      thresholds: Thresholds) -> Check:
    link = _pod_link(oldest_stuck, f"{reverse('pods')}?state=Assumed")
    if not stuck:
        return Check("binds_stuck", "Stuck binds", OK, "No assumed pod waits on its bind", link)
    level = graded(stuck, thresholds.stuck_binds)
    return Check("binds_stuck", "Stuck binds", level,
                 f"{stuck:,} assumed pod{'s' if stuck != 1 else ''} whose bind has not "
                 f"finished in time", link)


def comparer_check(run: ComparerRun | None, now: datetime, thresholds: Thresholds) -> Check:
    link = _overview("comparer")
    if run is None:
        return Check("comparer", "Cache vs cluster", OK, "No comparison yet", link)
    age = (now - run.at).total_seconds()
    error = getattr(run, "error", "") or ""
    if error:
        return Check("comparer", "Cache vs cluster", FAIL,
                     f"The last comparison failed ({ago(age)}): {error}", link)
    if age > thresholds.comparer_stale:
        return Check("comparer", "Cache vs cluster", WARN,
                     f"The last comparison is stale: {ago(age)}", link)
    if not run.clean:
        return Check("comparer", "Cache vs cluster", WARN,
                     f"The cache drifted from the cluster ({ago(age)}); the owner relists", link)
    return Check("comparer", "Cache vs cluster", OK, f"Clean ({ago(age)})", link)


def bind_failures_check(finished: int, failed: int, thresholds: Thresholds) -> Check:
    """The binds ended in the health window (read_model.bind_failures: the binds panel
    shows the same figure), the window named."""
    link = _overview("binds")
    ended = finished + failed
    window = window_text(thresholds.window)
    if ended < MIN_BIND_OUTCOMES:
        return Check("bind_failures", "Bind failures", OK,
                     f"{failed:,} of {ended:,} binds failed in {window} (too few to judge)",
                     link)
    percent = 100 * failed / ended
    return Check("bind_failures", "Bind failures", graded(percent, thresholds.bind_failures),
                 f"{percent:.0f}% of binds failed in {window} ({failed:,} of {ended:,})", link)


def samples_check(latest: datetime | None, now: datetime, period: float) -> Check:
    """Celery beat samples every `period`: without samples the charts and the stalled
    check are blind, and the reaper and comparer (beat's too) are not running either."""
    link = _overview("over-time")
    if latest is None:
        return Check("samples", "Celery beat", WARN, "No health sample yet: is Celery beat "
                     "running?", link)
    age = (now - latest).total_seconds()
    if age > STALE_SAMPLES * period:
        return Check("samples", "Celery beat", WARN, f"The latest health sample is from "
                     f"{ago(age)}: is Celery beat running?", link)
    return Check("samples", "Celery beat", OK, f"Sampling (latest {ago(age)})", link)


def pool_level(status: dict, thresholds: Thresholds) -> tuple[str, str]:
    """One pool's (level, what is wrong): the worst of its queue against its capacity, the
    99th percentile of its claims' waits and the share of its claims that expired, both
    over the health window (the pools process counts them: poolkeeper/recent.py). A pool
    with no idle pod, claims queued for seconds and claims expiring is starving, however
    short its queue."""
    capacity = status.get("capacity") or 0
    queued = status.get("queue_length") or 0
    levels = [(graded(100 * queued / capacity if capacity else 0, thresholds.pool_queue),
               f"{queued:,} of {capacity:,} queued")]
    recent = status.get("recent")
    if recent:
        window = window_text(recent["window"])
        wait = recent["wait_p99"]   # a histogram bucket's upper bound: "at most"
        if wait is not None:
            warn, fail = thresholds.pool_wait
            levels.append((FAIL if wait > fail else WARN if wait > warn else OK,
                           f"claims waited up to {wait:g} s (p99) in {window}"))
        if recent["claims"] >= MIN_POOL_CLAIMS:
            percent = 100 * recent["expired"] / recent["claims"]
            levels.append((graded(percent, thresholds.pool_expired),
                           f"{recent['expired']:,} of {recent['claims']:,} claims expired "
                           f"in {window}"))
    worst = max((level for level, _ in levels), key=_RANK.__getitem__)
    return worst, ", ".join(why for level, why in levels if level != OK)


def pools_check(status: dict | None, thresholds: Thresholds) -> Check:
    link = reverse("pools")
    pools = (status or {}).get("pools") or {}
    if not pools:
        return Check("pools", "Warm pools", OK, "No pools process reports pools", link)
    worst, why = OK, []
    for pool, s in sorted(pools.items()):
        level, what = pool_level(s, thresholds)
        if level != OK:
            why.append(f"{pool}: {what}")
        worst = max(worst, level, key=_RANK.__getitem__)
    count = f"{len(pools)} pool{'s' if len(pools) != 1 else ''}"
    message = ("Claims starve: " + "; ".join(why)) if why else (
        f"{count} serving: queues short, claims served in time")
    return Check("pools", "Warm pools", worst, message, link)


def reachability_check(name: str, title: str, error: str | None) -> Check:
    if error:
        return Check(name, title, FAIL, f"Not answering: {error}")
    return Check(name, title, OK, "Answering")


class DatabaseWatch:
    """The database check, judged over successive probes of a process: a database that
    refuses or errs fails at once; one that does not answer within DATABASE_TIMEOUT warns
    the first time (a busy machine can be that slow once: under load health said
    database=fail falsely, issue 22) and fails when the next probe does not answer either."""

    def __init__(self):
        self.unanswered = 0   # probes in a row that got no answer in time

    def check(self, error: str | None, no_answer: bool) -> Check:
        self.unanswered = self.unanswered + 1 if no_answer else 0
        if no_answer and self.unanswered == 1:
            return Check("database", "Database", WARN,
                         f"Slow: {error} (once; it fails if the next probe gets none)")
        if no_answer:
            return Check("database", "Database", FAIL,
                         f"Not answering: {error} ({self.unanswered} probes in a row)")
        return reachability_check("database", "Database", error)


_database_watch = DatabaseWatch()


# --- reading the figures --------------------------------------------------------------------
_prober = ThreadPoolExecutor(max_workers=1, thread_name_prefix="health-probe")


def _select_one(timeout: float):
    try:
        with bounded(connection, timeout), connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception:
        connection.close()   # the next probe connects afresh
        raise
    finally:
        connection.close_if_unusable_or_obsolete()


def _no_answer(seconds: float) -> str:
    return f"no answer within {seconds:g} s"


def probe_database(timeout: float = DATABASE_TIMEOUT) -> tuple[str | None, bool]:
    """(None, False) when the database answers a query within `timeout`, else (why not,
    whether it simply did not answer). Run in a thread of its own, whose connection the
    same deadline ends, so a database that hangs costs the caller `timeout`, not a hang."""
    try:
        _prober.submit(_select_one, timeout).result(timeout)
    except (FutureTimeout, NoAnswer):
        return _no_answer(timeout), True
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}".strip(), False
    return None, False


def database_error(timeout: float = DATABASE_TIMEOUT) -> str | None:
    """None when the database answers a query within `timeout`, else why not."""
    return probe_database(timeout)[0]


_probe_clients = {}


def redis_error(timeout: float = REACH_TIMEOUT) -> str | None:
    """None when Redis answers PING within `timeout`, else why not."""
    key = (settings.REDIS_URL, timeout)
    client = _probe_clients.get(key)
    if client is None:
        client = _probe_clients[key] = redis.Redis.from_url(
            settings.REDIS_URL, socket_timeout=timeout, socket_connect_timeout=timeout)
    try:
        client.ping()
    except redis.RedisError as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def oldest_uid(**filters) -> str | None:
    """The pod of these filters whose row changed longest ago (an index range)."""
    return (PodRecord.objects.filter(**filters).order_by("changed_at", "uid")
            .values_list("uid", flat=True).first())


def scheduling_progress(owner: OwnerStatus, now: datetime, window: float) -> SchedulingProgress:
    since = now - timedelta(seconds=window)
    pending = owner.pending if owner.live else None
    if pending is None:
        pending = pod_counts().pending
    then = (HealthSample.objects.filter(at__lte=since, pending__isnull=False)
            .order_by("-at").values_list("pending", flat=True).first())
    progressed = Transition.objects.filter(at__gte=since, kind__in=PROGRESS_KINDS).exists()
    oldest = oldest_uid(state=PodState.PENDING) if pending and not progressed else None
    top = owner.pending_top[0] if owner.live and owner.pending_top else None
    return SchedulingProgress(pending, then, progressed, oldest, window, top)


def _database_checks(owner: OwnerStatus, now: datetime, thresholds: Thresholds) -> list:
    """The checks that read the database (a few indexed queries)."""
    stuck = owner.counters.get("binds_stuck", 0) if owner.live else None
    oldest_stuck = (owner.counters.get("oldest_stuck") or {}).get("uid")
    finished, failed, _ = bind_failures(now, thresholds.window)
    return [scheduling_check(scheduling_progress(owner, now, thresholds.window)),
            stuck_binds_check(stuck, oldest_stuck, thresholds),
            comparer_check(ComparerRun.objects.order_by("-at", "-id").first(), now,
                           thresholds),
            bind_failures_check(finished, failed, thresholds),
            samples_check(HealthSample.objects.filter(at__lte=now).order_by("-at")
                          .values_list("at", flat=True).first(), now,
                          settings.SCHEDVIEW_SAMPLE_PERIOD)]


def gather(now: datetime | None = None, thresholds: Thresholds | None = None,
           owner: OwnerStatus | None = None) -> Health:
    """The health now, from what the processes report (a few indexed queries)."""
    now = now or timezone.now()
    thresholds = thresholds or Thresholds.from_settings()
    started = time.monotonic()
    error, no_answer = probe_database()
    redis_check = reachability_check("redis", "Redis", redis_error())
    owner = owner or owner_status()
    checks = [redis_check]
    owner_checks = [owner_check(owner), feed_check(owner, thresholds),
                    read_model_check(owner, thresholds)]
    database_checks = []
    if error is None:   # the rest reads the database, within what is left of its time
        left = max(0.2, DATABASE_TIMEOUT - (time.monotonic() - started))
        try:
            with bounded(connection, left):
                database_checks = _database_checks(owner, now, thresholds)
        except DATABASE_ERRORS as exc:
            no_answer = isinstance(exc, NoAnswer)
            error = _no_answer(DATABASE_TIMEOUT) if no_answer else (
                f"{type(exc).__name__}: {exc}".strip())
    checks += [_database_watch.check(error, no_answer), *owner_checks, *database_checks]
    checks.append(pools_check(read_pools_status(), thresholds))
    return Health(tuple(checks), now.timestamp(), owner.feed_backlog if owner.live else None,
                  owner.feed_lag if owner.live else None,
                  injected(redis_client(settings.REDIS_URL), settle=settle_time(thresholds)))


def database_down(message: str, now: datetime | None = None) -> Health:
    """The health when the database cannot even say who asks (a cut met while a session or
    token is looked up, issue 22): its check failing, and nothing read elsewhere, since the
    caller is unknown and learns no more than the database's error already says."""
    return Health((Check("database", "Database", FAIL, message[:1].upper() + message[1:]),),
                  (now or timezone.now()).timestamp())


def settle_time(thresholds: Thresholds) -> float:
    """Seconds after a cause ends that its warnings may still show: the bind failures and
    pool figures over the window, drift until the comparison after the next."""
    return thresholds.window + 2 * settings.SCHEDVIEW_COMPARE_PERIOD


def current() -> Health:
    """The health as the pages show it: judged at most once per SHARED_FOR seconds in a
    process (its local memory cache), since every open page asks every 5 s."""
    return cache.get_or_set(CURRENT_KEY, gather, SHARED_FOR)


# --- samples ----------------------------------------------------------------------------------
SAMPLED_KINDS = {"assumes": "pod_assumed", "expiries": "pod_expired",
                 "forgets": "pod_forgotten"}


def transitions_counted(after_seq: int | None, start: datetime) -> tuple[int | None, dict]:
    """The sampled counts of the transitions written since the previous sample: numbered
    above `after_seq` (the highest it counted), or, with no previous number, from `start`.
    Counted by number, not by time: a transition lands a flush after it happened, so a
    sample counting by time would miss the ones written just after it was taken, for ever.
    Returns the highest number counted now, and the counts with the earliest time stamped
    on a counted transition (`counted_from`: where the events behind the sample begin)."""
    rows = Transition.objects.order_by()
    rows = rows.filter(seq__gt=after_seq) if after_seq is not None else rows.filter(at__gte=start)
    span = rows.aggregate(upto=Max("seq"), earliest=Min("at"))
    upto = span["upto"]
    if upto is None:
        return after_seq, {**{figure: 0 for figure in SAMPLED_KINDS}, "binds": 0,
                           "bind_failures": 0, "counted_from": None}
    rows = rows.filter(seq__lte=upto)
    counts = dict(rows.filter(kind__in=SAMPLED_KINDS.values())
                  .values_list("kind").annotate(n=Count("*")).values_list("kind", "n"))
    sampled = {figure: counts.get(kind, 0) for figure, kind in SAMPLED_KINDS.items()}
    sampled["binds"], sampled["bind_failures"] = bind_outcomes_of(rows)
    sampled["counted_from"] = span["earliest"]
    return upto, sampled


def take_sample(now: datetime | None = None, period: float | None = None) -> HealthSample:
    """Judge the health and record it with the counts of the transitions written since the
    previous sample, over the time since it (at most a few periods)."""
    now = now or timezone.now()
    period = period or settings.SCHEDVIEW_SAMPLE_PERIOD
    previous = HealthSample.objects.filter(at__lt=now).order_by("-at").values_list(
        "at", "seq").first()
    start = max(previous[0], now - timedelta(seconds=3 * period)) if previous else (
        now - timedelta(seconds=period))
    counted_seq, counts = transitions_counted(previous[1] if previous else None, start)
    owner = owner_status()
    health = gather(now, owner=owner)
    counters = owner.counters if owner.live else {}
    if owner.live:   # the cache's own counts
        assumed = counters.get("assumed") or 0
        pending, added = owner.pending, (counters.get("pods") or 0) - assumed
    else:            # what the last owner wrote
        written = pod_counts()
        pending, assumed, added = written.pending, written.assumed, written.added
    return HealthSample.objects.create(
        at=now, period=(now - start).total_seconds(), level=health.level,
        problems={check.name: check.level for check in health.problems}, pending=pending,
        assumed=assumed, added=added, feed_backlog=counters.get("feed_backlog"),
        feed_lag=counters.get("feed_lag"),
        read_model_backlog=counters.get("read_model_backlog"),
        binds_stuck=counters.get("binds_stuck", 0) if owner.live else None,
        seq=counted_seq, **counts)

