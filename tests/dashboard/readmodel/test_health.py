"""The health model: each check judged from figures passed in, then `gather` over the
read model and the owner's status, the API, the banner and the web's probes."""
import threading
import time
from datetime import datetime, timedelta, timezone as tz

import orjson
import pytest
from django.conf import settings
from django.utils import timezone

from dashboard.models import ComparerRun, HealthSample, PodRecord, Transition
from dashboard.readmodel import health, read_model
from dashboard.readmodel.health import FAIL, OK, WARN, SchedulingProgress, Thresholds
from dashboard.readmodel.read_model import OwnerStatus
from dashboard.wire.clients import redis_client
from dashboard.wire.keys import OWNER_STATUS

T = Thresholds(feed_backlog=(100, 1000), feed_lag=(5, 30), read_model_backlog=(100, 1000), stuck_binds=(1, 5),
               bind_failures=(10, 30), pool_queue=(50, 90), window=60, comparer_stale=180)
NOW = datetime(2026, 11, 24, 12, tzinfo=tz.utc)


def live(**counters):
    return OwnerStatus("live", dict({"synced": True, "at": NOW.timestamp()}, **counters))


# --- each check, figures passed in -----------------------------------------------------------
def test_owner_absent_fails_syncing_warns_synced_is_ok():
    assert health.owner_check(OwnerStatus("absent")).level == FAIL
    assert "manage.py watch" in health.owner_check(OwnerStatus("absent")).message
    assert health.owner_check(OwnerStatus("unreachable", error="refused")).level == FAIL
    assert health.owner_check(live(synced=False)).level == WARN
    ok = health.owner_check(live())
    assert ok.level == OK and ok.link == "/#owner-status"
    assert health.owner_check(live(extender_refused="")).level == OK


def test_a_leader_not_serving_kube_scheduler_warns_why():
    """Issue 22: the port held by a frozen former leader; healthy otherwise, it is not."""
    check = health.owner_check(live(extender_refused="cannot listen on 127.0.0.1:8101: "
                                                     "Address already in use"))
    assert check.level == WARN
    assert check.message == ("Leading and synced, but not serving kube-scheduler's extender: "
                             "cannot listen on 127.0.0.1:8101: Address already in use")


@pytest.mark.parametrize("backlog, level", [(0, OK), (99, OK), (100, WARN), (999, WARN),
                                            (1000, FAIL)])
def test_feed_and_read_model_backlogs_by_threshold(backlog, level):
    assert health.feed_check(live(feed_backlog=backlog), T).level == level
    assert health.read_model_check(live(read_model_backlog=backlog), T).level == level


@pytest.mark.parametrize("waiting, backlog, level, says", [
    (0.0, 3, OK, "Up to date (3 changes being written)"),
    (4.9, 3, OK, "Up to date (3 changes being written)"),
    (5.0, 3, WARN, "A database write has waited 5 s: is the database answering? 3 changes"),
    (31.0, 1500, FAIL, "A database write has waited 31 s"),
])
def test_a_write_waiting_on_the_database_warns_whatever_the_backlog(waiting, backlog, level,
                                                                     says):
    check = health.read_model_check(live(read_model_backlog=backlog, write_waiting=waiting), T)
    assert (check.level, check.message.startswith(says)) == (level, True), check.message


@pytest.mark.parametrize("lag, level", [(0.0, OK), (4.9, OK), (5.0, WARN), (30.0, FAIL)])
def test_the_feed_is_graded_by_its_lag_in_seconds_too(lag, level):
    check = health.feed_check(live(feed_backlog=3, feed_lag=lag), T)
    assert check.level == level
    assert f"{lag:.1f} s behind" in check.message and "3 " in check.message


def test_an_owner_without_a_lag_is_graded_by_its_backlog():
    check = health.feed_check(live(feed_backlog=1000), T)
    assert check.level == FAIL and check.message == "1,000 watch events wait to be applied " \
        "to the cache"


@pytest.mark.parametrize("silent, lag, level, message", [
    ({}, 0.0, OK, "Keeping up (0.0 s behind, 3 waiting)"),          # an owner that says none
    ({"pods": 12.0, "nodes": 74.9}, 0.0, OK, "Keeping up (0.0 s behind, 3 waiting)"),
    ({"pods": 75.0}, 0.0, WARN, "Watch silent for 75 s (pods)"),
    ({"pods": 80.4, "nodes": 1200.0}, 0.0, WARN,
     "Watch silent for 1,200 s (nodes), 80 s (pods)"),
    ({"pods": 90.0}, 30.0, FAIL, "The cache is 30.0 s behind the watch (3 events wait to be "
                                 "applied); Watch silent for 90 s (pods)"),
], ids=["unreported", "quiet", "at the bound", "both kinds", "with a lag"])
def test_a_silent_watch_warns_even_with_no_lag(silent, lag, level, message):
    # the owner restarts a watch silent for its bound (75 s): from then on health warns; a
    # real API server's quiet watch gets a bookmark about every minute (capture 55)
    check = health.feed_check(live(feed_backlog=3, feed_lag=lag, watch_silent=silent,
                                   watch_silence=75.0), T)
    assert (check.level, check.message) == (level, message)


@pytest.mark.parametrize("claims, silent, says", [
    ({"known": True, "count": 1200, "denied": False}, {},
     "Keeping up (0.0 s behind, 3 waiting); 1,200 claims"),
    ({"known": True, "count": 1, "denied": False}, {},
     "Keeping up (0.0 s behind, 3 waiting); 1 claim"),
    ({"known": False, "count": 0, "denied": False}, {},
     "Keeping up (0.0 s behind, 3 waiting); claims not listed yet"),
    ({"known": False, "count": 0, "denied": True}, {"pods": 80.0},
     "Watch silent for 80 s (pods); claims unchecked: the API server forbids listing "
     "persistentvolumeclaims (HTTP 403)"),
], ids=["known", "one", "not yet", "denied"])
def test_the_feed_says_what_the_owner_knows_of_the_claims_and_never_warns_for_them(
        claims, silent, says):
    check = health.feed_check(live(feed_backlog=3, feed_lag=0.0, claims=claims,
                                   watch_silent=silent, watch_silence=75.0), T)
    assert check.message == says
    assert check.level == (WARN if silent else OK)


def test_backlogs_without_an_owner_say_nothing_is_known():
    assert health.feed_check(OwnerStatus("absent"), T).level == OK


def test_a_stalled_scheduler_fails_and_links_to_the_oldest_pending_pod():
    stalled = health.scheduling_check(SchedulingProgress(520, 4, False, "u-old", 80))
    assert stalled.level == FAIL
    assert stalled.message.startswith("Stalled: pending grew 4 -> 520")
    assert stalled.link == "/pods/u-old/"


GPU_SUMMARY = "0/100 nodes are available: 100 Insufficient nvidia.com/gpu."
GPU = {"reason": "Insufficient nvidia.com/gpu", "pods": 480, "summary": GPU_SUMMARY}


@pytest.mark.parametrize("top, message, link", [
    (None, "Stalled: pending grew 4 -> 520 in 60 s and no pod was assumed or bound",
     "/pods/u-old/"),
    (GPU, "Stalled: pending grew 4 -> 520 in 60 s and no pod was assumed or bound; most "
          f"wait for: {GPU_SUMMARY} (480 pods)",
     "/pending/?reason=Insufficient+nvidia.com%2Fgpu"),
    ({"reason": "fits a node now", "pods": 1,
      "summary": "3/100 nodes can take the pod now"},
     "Stalled: pending grew 4 -> 520 in 60 s and no pod was assumed or bound; most wait "
     "for: 3/100 nodes can take the pod now (1 pod)", "/pending/?reason=fits+a+node+now"),
    ({"reason": "Insufficient cpu", "pods": 2, "summary": ""},   # an owner without summaries
     "Stalled: pending grew 4 -> 520 in 60 s and no pod was assumed or bound; most wait "
     "for: Insufficient cpu (2 pods)", "/pending/?reason=Insufficient+cpu"),
], ids=["no reasons yet", "gpus", "fits", "no summary"])
def test_a_stall_names_the_top_pending_reason_and_links_its_pods(top, message, link):
    check = health.scheduling_check(SchedulingProgress(520, 4, False, "u-old", 60, top))
    assert (check.level, check.message, check.link) == (FAIL, message, link)


def test_the_top_reason_is_named_only_for_a_stall():
    check = health.scheduling_check(SchedulingProgress(4, 4, False, "u-old", 60, GPU))
    assert check.level == OK and "most wait" not in check.message
    assert check.link == "/pods/u-old/"


@pytest.mark.parametrize("progress", [
    SchedulingProgress(520, 4, True, None, 60),      # pods were placed: progress
    SchedulingProgress(4, 4, False, "u", 60),        # not growing (a pod that fits nowhere)
    SchedulingProgress(3, None, False, "u", 60),     # no sample from the window's start yet
    SchedulingProgress(0, 9, False, None, 60),       # nothing pending
    SchedulingProgress(None, None, False, None, 60),  # unknown
])
def test_scheduling_is_ok_unless_pending_grows_without_progress(progress):
    assert health.scheduling_check(progress).level == OK


def test_stuck_binds_warn_then_fail_and_link_to_the_pod():
    assert health.stuck_binds_check(0, None, T).level == OK
    assert health.stuck_binds_check(None, None, T).level == OK   # no owner: unknown
    one = health.stuck_binds_check(1, "u-stuck", T)
    assert (one.level, one.link) == (WARN, "/pods/u-stuck/")
    assert "1 assumed pod whose bind" in one.message
    assert health.stuck_binds_check(5, "u", T).level == FAIL


def run(age, clean=True, **extra):
    row = ComparerRun(at=NOW - timedelta(seconds=age), clean=clean, report={})
    for name, value in extra.items():
        setattr(row, name, value)
    return row


def test_the_comparer_by_result_error_and_age():
    assert health.comparer_check(None, NOW, T).level == OK
    assert health.comparer_check(run(30), NOW, T).level == OK
    assert health.comparer_check(run(30, clean=False), NOW, T).level == WARN
    stale = health.comparer_check(run(600), NOW, T)
    assert stale.level == WARN and "stale" in stale.message
    failed = health.comparer_check(run(30, error="the list timed out"), NOW, T)
    assert failed.level == FAIL and "the list timed out" in failed.message


def test_bind_failures_by_percent_once_there_are_enough():
    assert health.bind_failures_check(1, 2, T).level == OK          # 3 ended: too few
    assert health.bind_failures_check(95, 5, T).level == OK
    assert health.bind_failures_check(85, 15, T).level == WARN
    high = health.bind_failures_check(60, 40, T)
    # The figure names its window: the banner, the panel and the binds panel show it alike.
    assert high.level == FAIL
    assert high.message == "40% of binds failed in the last minute (40 of 100)"
    assert "in the last minute (too few to judge)" in health.bind_failures_check(1, 2, T).message


def test_pools_by_queue_against_capacity():
    def pools(*queued):
        return {"pools": {f"p{i}": {"queue_length": q, "capacity": 100}
                          for i, q in enumerate(queued)}}
    assert health.pools_check(None, T).level == OK
    assert health.pools_check(pools(10, 20), T).level == OK
    warn = health.pools_check(pools(10, 60), T)
    assert warn.level == WARN and "p1: 60 of 100 queued" in warn.message
    assert health.pools_check(pools(95, 60), T).level == FAIL
    assert health.pools_check(pools(10), T).link == "/pools/"


def starving(**recent):
    """The web pool of issue 25: no idle pod, 15 claims queued of 1,024."""
    return {"pools": {"web": {"queue_length": 15, "capacity": 1024, "idle_ready": 0,
                              "recent": dict({"window": 60, "claims": 0, "claimed": 0,
                                              "expired": 0, "wait_p99": None}, **recent)}}}


def test_a_starving_pool_is_judged_by_its_waits_and_expiries_not_its_short_queue():
    """0 idle pods, 15 of 1,024 claims queued, p99 = 5 s waits, claims expiring: health
    said "ok, queues short"."""
    assert health.pools_check(starving(), T).level == OK
    slow = health.pools_check(starving(claims=40, claimed=40, wait_p99=2.0), T)
    assert slow.level == WARN
    assert slow.message == "Claims starve: web: claims waited up to 2 s (p99) in the last minute"
    # A p99 is a bucket's upper bound: waits of at most 1 s are within a 1 s threshold.
    assert health.pools_check(starving(claims=40, claimed=40, wait_p99=1.0), T).level == OK
    starved = health.pools_check(starving(claims=50, claimed=30, expired=20, wait_p99=10.0), T)
    assert starved.level == FAIL
    assert "web: claims waited up to 10 s (p99) in the last minute, 20 of 50 claims expired " \
           "in the last minute" in starved.message
    assert health.pools_check(starving(claims=5, expired=5), T).level == OK   # too few to judge


def test_samples_older_than_three_periods_mean_beat_is_not_running():
    assert health.samples_check(None, NOW, 10).level == WARN
    assert health.samples_check(NOW - timedelta(seconds=25), NOW, 10).level == OK
    stale = health.samples_check(NOW - timedelta(seconds=31), NOW, 10)
    assert stale.level == WARN and "Celery beat" in stale.message


def test_the_health_is_its_worst_check_and_lists_failures_first():
    checks = (health.Check("a", "A", WARN, "w"), health.Check("b", "B", OK, "o"),
              health.Check("c", "C", FAIL, "f"))
    judged = health.Health(checks, NOW.timestamp())
    assert judged.level == FAIL
    assert [c.name for c in judged.problems] == ["c", "a"]
    assert health.Health((checks[1],), 0).level == OK


def test_thresholds_come_from_the_settings(settings):
    settings.SCHEDVIEW_HEALTH_FEED_BACKLOG = (7, 8)
    assert Thresholds.from_settings().feed_backlog == (7, 8)


# --- gather, over the database and Redis ---------------------------------------------------
@pytest.fixture
def owner_reports(redis_url):
    """Publish an owner status as a live owner does (the key expires like the owner's)."""
    client = redis_client(settings.REDIS_URL)

    def report(**counters):
        client.set(OWNER_STATUS, orjson.dumps(dict({"synced": True, "at": timezone.now()
                                                  .timestamp()}, **counters)), ex=10)
    yield report
    client.delete(OWNER_STATUS)


def pending_pod(uid, ago_seconds):
    return PodRecord.objects.create(uid=uid, namespace="default", name=uid, state="Pending",
                                    changed_at=timezone.now() - timedelta(seconds=ago_seconds))


@pytest.mark.django_db
def test_gather_sees_a_stalled_scheduler_and_its_clearing(owner_reports, settings):
    settings.SCHEDVIEW_HEALTH_WINDOW = 60
    now = timezone.now()
    HealthSample.objects.create(at=now - timedelta(seconds=90), period=10, level="ok",
                                pending=4)
    pending_pod("oldest", 300)
    pending_pod("newer", 10)
    owner_reports(pending=520, feed_backlog=0, read_model_backlog=0)
    judged = health.gather(now)
    scheduling = next(c for c in judged.checks if c.name == "scheduling")
    assert (scheduling.level, scheduling.link) == (FAIL, "/pods/oldest/")
    assert judged.level == FAIL and judged.problems[0].name == "scheduling"
    # The owner's sweep has counted them: the banner names the top reason and links it.
    owner_reports(pending=520, feed_backlog=0, read_model_backlog=0, pending_top=[
        {"reason": "Insufficient cpu", "pods": 400, "summary": "0/3 nodes are available: "
                                                               "3 Insufficient cpu."},
        {"reason": "Too many pods", "pods": 120, "summary": "0/3 nodes are available: "
                                                            "3 Too many pods."}])
    scheduling = next(c for c in health.gather(now).checks if c.name == "scheduling")
    assert scheduling.message.endswith("; most wait for: 0/3 nodes are available: 3 "
                                       "Insufficient cpu. (400 pods)")
    assert scheduling.link == "/pending/?reason=Insufficient+cpu"
    # A pod assumed: progress.
    Transition.objects.create(seq=1, at=now - timedelta(seconds=5), kind="pod_assumed",
                              key="newer", cause="extender")
    scheduling = next(c for c in health.gather(now).checks if c.name == "scheduling")
    assert scheduling.level == OK


@pytest.mark.django_db
def test_gather_reads_stuck_binds_from_the_owner_and_links_the_oldest(owner_reports):
    owner_reports(binds_stuck=1, pending=0,
                  oldest_stuck={"uid": "stuck", "namespace": "default", "name": "stuck"})
    check = next(c for c in health.gather().checks if c.name == "binds_stuck")
    assert (check.level, check.link) == (WARN, "/pods/stuck/")
    owner_reports(pending=0)     # an owner without the figure: nothing stuck
    check = next(c for c in health.gather().checks if c.name == "binds_stuck")
    assert check.level == OK


@pytest.mark.parametrize("written_ago, state", [(0, "live"), (2.5, "live"), (3.2, "stale"),
                                                (9.5, "stale")])
def test_a_status_older_than_the_renewal_bound_is_from_an_owner_that_stopped(
        redis_url, settings, written_ago, state):
    """Issue 22: after a kill -9 health said "Leading and synced" until the status key
    expired. Its age is read from the key's time to live (the owner sets 10 s): past 1.5
    lease renewal periods (3 s here) no owner is leading."""
    settings.SCHEDVIEW_LEASE_RETRY_PERIOD = 2.0
    client = redis_client(settings.REDIS_URL)
    client.set(OWNER_STATUS, orjson.dumps({"synced": True}),
               px=int((read_model.OWNER_STATUS_TTL - written_ago) * 1000))
    try:
        status = read_model.owner_status()
    finally:
        client.delete(OWNER_STATUS)
    assert (status.state, status.live) == (state, state == "live")
    assert status.age == pytest.approx(written_ago, abs=0.4)
    check = health.owner_check(status)
    if state == "stale":
        assert check.level == FAIL and check.message.startswith(
            f"The cache owner's last report is {written_ago:.0f} s old: it stopped")
    else:
        assert (check.level, check.message.startswith("Leading and synced")) == (OK, True)


@pytest.mark.django_db
def test_without_an_owner_gather_fails_on_it(redis_url):
    redis_client(settings.REDIS_URL).delete(OWNER_STATUS)
    HealthSample.objects.create(at=timezone.now(), period=10, level="ok")
    judged = health.gather()
    assert [c.name for c in judged.checks] == list(health.CHECKS)
    assert [c.name for c in judged.problems] == ["owner"]


def test_reachability_reports_what_does_not_answer(settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"     # nothing listens on port 1
    assert "Error" in health.redis_error(timeout=0.5)
    assert health.reachability_check("redis", "Redis", "refused").level == FAIL


# --- samples ---------------------------------------------------------------------------------
@pytest.mark.django_db
def test_a_sample_counts_the_periods_transitions_and_the_owners_figures(owner_reports):
    now = timezone.now()
    # Pod a: its binding finished, then the watch confirmed it (one bind); b: confirmed
    # before the binder told (one bind); c: forgotten by the bind task; d: by an operator.
    kinds = [("a", "pod_assumed", "extender", ""), ("a", "pod_binding_finished", "bind", ""),
             ("a", "pod_confirmed", "watch", "Assumed"), ("b", "pod_confirmed", "watch",
                                                          "Assumed"),
             ("c", "pod_forgotten", "bind", ""), ("d", "pod_forgotten", "operator", ""),
             ("e", "pod_expired", "reaper", ""), ("f", "pod_added", "watch", "")]
    for seq, (key, kind, cause, before) in enumerate(kinds, 1):
        Transition.objects.create(seq=seq, at=now - timedelta(seconds=3), kind=kind, key=key,
                                  cause=cause, from_state=before)
    Transition.objects.create(seq=99, at=now - timedelta(seconds=30), kind="pod_expired",
                              key="k", cause="reaper")      # before the period
    owner_reports(pending=5, assumed=2, pods=10, feed_backlog=7, feed_lag=0.4,
                  read_model_backlog=8, binds_stuck=1)
    sample = health.take_sample(now, period=10)
    assert (sample.pending, sample.assumed, sample.added) == (3, 2, 8)   # 5 unbound, 2 assumed
    assert (sample.assumes, sample.binds, sample.bind_failures, sample.forgets,
            sample.expiries) == (1, 2, 1, 2, 1)   # binds: a and b, once each
    assert (sample.feed_backlog, sample.feed_lag, sample.read_model_backlog,
            sample.binds_stuck) == (7, 0.4, 8, 1)
    assert sample.period == 10 and sample.level == WARN
    assert sample.problems == {"binds_stuck": WARN, "samples": WARN}   # none before it
    # The next one counts from this one on.
    later = health.take_sample(now + timedelta(seconds=4), period=10)
    assert later.period == 4 and later.binds == 0


@pytest.mark.django_db
def test_a_transition_written_after_the_sample_of_its_time_is_counted_by_the_next(
        owner_reports):
    """A transition lands a flush after it happened: one stamped before a sample but written
    after it is counted by the next sample, not lost between the two (the rates chart's
    points and their links to the events behind them, issue 24)."""
    owner_reports(pending=0)
    now = timezone.now()
    Transition.objects.create(seq=1, at=now - timedelta(milliseconds=500), kind="pod_forgotten",
                              key="a", cause="operator")
    first = health.take_sample(now, period=1)
    assert (first.forgets, first.seq) == (1, 1)
    Transition.objects.create(seq=2, at=now - timedelta(milliseconds=300),
                              kind="pod_forgotten", key="b", cause="operator")
    second = health.take_sample(now + timedelta(seconds=1), period=1)
    assert (second.forgets, second.seq) == (1, 2)
    # Where the events behind the sample begin: before its period, at b's stamp.
    assert second.counted_from == now - timedelta(milliseconds=300)
    quiet = health.take_sample(now + timedelta(seconds=2), period=1)
    assert (quiet.forgets, quiet.seq, quiet.counted_from) == (0, 2, None)


@pytest.mark.django_db
def test_bind_failures_come_from_the_samples_of_the_window(owner_reports, settings):
    settings.SCHEDVIEW_HEALTH_WINDOW = 60
    now = timezone.now()
    for age, binds, failures in ((10, 30, 15), (40, 30, 5), (100, 0, 100)):
        HealthSample.objects.create(at=now - timedelta(seconds=age), period=10, level="ok",
                                    binds=binds, bind_failures=failures)
    assert read_model.sampled_bind_outcomes(now - timedelta(seconds=60)) == (60, 20)
    owner_reports(pending=0)
    check = next(c for c in health.gather(now).checks if c.name == "bind_failures")
    assert check.level == WARN and "25%" in check.message


@pytest.mark.django_db
def test_without_an_owner_a_sample_says_so_and_counts_what_was_written(redis_url):
    redis_client(settings.REDIS_URL).delete(OWNER_STATUS)
    pending_pod("p1", 5)
    PodRecord.objects.create(uid="a1", namespace="default", name="a1", state="Assumed")
    sample = health.take_sample(timezone.now(), period=10)
    assert (sample.pending, sample.assumed, sample.added) == (1, 1, 0)
    assert sample.binds_stuck is None and sample.feed_backlog is None   # unknown: gaps
    assert sample.feed_lag is None
    assert sample.level == FAIL and sample.problems == {"owner": FAIL, "samples": WARN}


@pytest.mark.parametrize("probes, levels", [
    ([(None, False)], [OK]),
    ([("OperationalError: refused", False)], [FAIL]),              # an answer: it is down
    ([("no answer within 2 s", True), (None, False)], [WARN, OK]),  # once slow: a warning
    ([("no answer within 2 s", True)] * 3, [WARN, FAIL, FAIL]),     # it persists: a failure
    ([("no answer within 2 s", True), (None, False), ("no answer within 2 s", True)],
     [WARN, OK, WARN]),
])
def test_the_database_check_fails_on_no_answer_only_when_it_persists(probes, levels):
    watch = health.DatabaseWatch()
    judged = [watch.check(error, no_answer) for error, no_answer in probes]
    assert [check.level for check in judged] == levels
    for check, (error, _) in zip(judged, probes):
        assert (error or "Answering") in check.message


@pytest.mark.django_db
def test_health_answers_within_its_database_time_when_the_database_hangs(
        owner_reports, monkeypatch):
    """A database that answers nothing costs gather DATABASE_TIMEOUT, not a hang, and its
    check says so (issue 22: health said "database ok" after 9.6 s)."""
    release = threading.Event()
    owner_reports(pending=0)
    health.gather()   # once answering: what a first judgement sets up is not timed below
    monkeypatch.setattr(health, "DATABASE_TIMEOUT", 0.3)
    monkeypatch.setattr(health, "_database_watch", health.DatabaseWatch())
    monkeypatch.setattr(health, "_select_one", lambda timeout: release.wait(30))
    monkeypatch.setattr(health.probe_database, "__defaults__", (0.3,))
    try:
        for level in (WARN, FAIL):
            started = time.monotonic()
            judged = health.gather()
            took = time.monotonic() - started
            database = next(c for c in judged.checks if c.name == "database")
            assert (database.level, took < 0.3 + 1.0) == (level, True), (database, took)
            assert "no answer within 0.3 s" in database.message
            assert "scheduling" not in [c.name for c in judged.checks]   # it reads the database
    finally:
        release.set()
