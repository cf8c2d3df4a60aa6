"""The overview's bind panel: Celery's queue length in Redis, and the failure rate of the
binds that ended in the health window, from the health samples (the banner's figure)."""
from datetime import timedelta
from html import unescape

import pytest
from django.conf import settings
from django.core.cache import cache
from django.test import override_settings
from django.utils import timezone

from dashboard.celery import app as celery_app
from dashboard.models import HealthSample
from dashboard.readmodel import read_model
from dashboard.wire.clients import redis_client
from tests.dashboard.web.nodes.nodepages import get, squash, transition

pytestmark = pytest.mark.django_db


@pytest.fixture
def queue(redis_url):
    """Celery's default queue in the run's Redis, emptied around the test."""
    name = celery_app.conf.task_default_queue
    redis_client(settings.REDIS_URL).delete(name)
    yield name
    redis_client(settings.REDIS_URL).delete(name)


def binds_panel(html):
    return squash(html.split('<section class="panel" id="binds">')[1].split("</section>")[0])


def test_the_overview_counts_the_queued_tasks(viewer_client, queue):
    _, html = get(viewer_client, "/")
    assert "<dt>Queued</dt><dd>0 tasks" in binds_panel(html)
    redis_client(settings.REDIS_URL).rpush(queue, *[b"{}"] * 3)
    response, html = get(viewer_client, "/")
    assert response.context["overview"].binds.queued == 3
    assert "<dt>Queued</dt><dd>3 tasks <small>in Celery's queue</small>" in binds_panel(html)


def sample(age: float, binds: int, failures: int):
    """A health sample taken `age` seconds ago, counting the binds of its period."""
    HealthSample.objects.create(at=timezone.now() - timedelta(seconds=age), period=10,
                                level="ok", binds=binds, bind_failures=failures)


def test_the_failure_rate_is_the_health_windows_and_says_so(viewer_client, queue, settings):
    """Banner 101/418, health 121/501, this panel 117/507 "last 5 minutes": one figure now,
    over the health window, named."""
    settings.SCHEDVIEW_HEALTH_WINDOW = 60
    sample(10, 2, 1)
    sample(40, 1, 0)
    sample(70, 50, 50)        # older than the window
    cache.clear()             # the health pages share, judged a moment ago
    response, html = get(viewer_client, "/")
    binds = response.context["overview"].binds
    assert (binds.finished, binds.failed, binds.failure_percent) == (3, 1, 25)
    panel = binds_panel(html)
    assert 'value="25">25%</meter> 25%' in panel
    assert "1 of 4 binds failed in the last minute" in panel
    check = next(c for c in response.context["health"].checks if c.name == "bind_failures")
    assert "1 of 4 binds failed in the last minute" in check.message


def test_a_bind_counts_once_whether_the_watch_or_the_binder_told_first():
    """On a real API server the watch confirms most bound pods before the binder reports;
    extender binds and bind deadlines count too. (A sample counts its seconds this way.)"""
    now = timezone.now() - timedelta(seconds=30)
    transition(1, "pod_confirmed", key="uid-a", from_state="Assumed", at=now)     # watch first
    transition(2, "pod_confirmed", key="uid-b", from_state="Assumed", at=now)
    transition(3, "pod_binding_finished", key="uid-b", cause="extender", from_state="Assumed",
               to_state="Assumed", at=now)                                       # both: once
    transition(4, "pod_forgotten", key="uid-c", cause="extender", at=now)        # bind refused
    transition(5, "pod_forgotten", key="uid-d", cause="bind deadline", at=now)
    transition(6, "pod_added", key="uid-e", from_state="Initial", at=now)        # not a bind
    transition(7, "pod_forgotten", key="uid-f", cause="operator", at=now)        # not a bind
    assert read_model.bind_outcomes(now - timedelta(seconds=1)) == (2, 2)


def test_no_binds_is_said_plainly(viewer_client, queue):
    assert "no binds ended in the last minute" in binds_panel(get(viewer_client, "/")[1])
    assert read_model.BindHealth(0, 0, 0, 60).failure_percent == 0


@override_settings(REDIS_URL="unix:///nonexistent/schedview-test.sock")
def test_an_unreachable_redis_is_said_and_the_rest_still_shows(viewer_client):
    sample(5, 0, 1)
    response, html = get(viewer_client, "/")
    assert response.context["overview"].binds.queued is None
    panel = binds_panel(html)
    assert "Redis unreachable" in panel and "1 of 1 bind failed" in panel


def test_the_binds_card_lists_the_latest_failures_with_their_causes(viewer_client, queue,
                                                                     settings):
    """Where the banner's "see why" leads: the window's newest failed binds, each with the
    API server's answer; an operator's forget and failures before the window are not."""
    settings.SCHEDVIEW_HEALTH_WINDOW = 60
    sample(10, 1, 3)
    now = timezone.now()
    transition(1, "pod_forgotten", key="uid-old", cause="bind", at=now - timedelta(seconds=90),
               detail="binding answered 500 Internal Server Error: long ago")
    transition(2, "pod_forgotten", key="uid-a", name="a", cause="bind",
               at=now - timedelta(seconds=20),
               detail="binding answered 503 Service Unavailable: etcd leader changed "
                      "(after 3 attempts)")
    transition(3, "pod_forgotten", key="uid-op", cause="operator", at=now - timedelta(seconds=10),
               detail="forgotten by alice over the API")
    transition(4, "pod_forgotten", key="uid-b", name="b", node="n2", cause="extender",
               at=now - timedelta(seconds=5),
               detail='binding refused: 403 pods "b" is forbidden: quota exceeded')
    cache.clear()
    response, html = get(viewer_client, "/")
    latest = response.context["overview"].binds.latest_failures
    assert [(f.uid, f.cause) for f in latest] == [("uid-b", "extender"), ("uid-a", "bind")]
    panel = unescape(binds_panel(html))
    assert ('<a href="/pods/uid-b/">default/b</a> on <a href="/nodes/n2/">n2</a> '
            '<small>(extender)</small>: <span class="cause-detail">binding refused: 403 pods '
            '"b" is forbidden: quota exceeded</span>') in panel
    assert "etcd leader changed (after 3 attempts)" in panel
    assert "long ago" not in panel and "alice" not in panel
    check = next(c for c in response.context["health"].checks if c.name == "bind_failures")
    assert check.link.endswith("#binds")          # "see why" leads here


def test_without_failures_the_card_lists_none(viewer_client, queue):
    cache.clear()
    response, html = get(viewer_client, "/")
    assert response.context["overview"].binds.latest_failures == ()
    assert "Latest failures" not in binds_panel(html)
