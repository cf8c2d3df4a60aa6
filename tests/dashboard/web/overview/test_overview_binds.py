"""The overview's bind panel: Celery's queue length in Redis, and the failure rate of the
binds that ended recently, from the history."""
from datetime import timedelta

import pytest
from django.conf import settings
from django.test import override_settings
from django.utils import timezone

from dashboard.celery import app as celery_app
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


def test_the_failure_rate_counts_the_binds_that_ended_in_the_last_minutes(viewer_client, queue):
    now = timezone.now()
    for seq in range(1, 4):
        transition(seq, "pod_binding_finished", cause="bind", at=now - timedelta(minutes=1))
    transition(4, "pod_forgotten", cause="bind", at=now - timedelta(seconds=10))
    transition(5, "pod_forgotten", cause="bind", at=now - timedelta(minutes=6))     # too old
    transition(6, "pod_forgotten", cause="operator", at=now)                         # no bind
    transition(7, "pod_binding_finished", cause="bind", at=now - timedelta(hours=2))  # too old
    response, html = get(viewer_client, "/")
    binds = response.context["overview"].binds
    assert (binds.finished, binds.failed, binds.failure_percent) == (3, 1, 25)
    panel = binds_panel(html)
    assert 'value="25">25%</meter> 25%' in panel
    assert "1 of 4 binds failed in the last 5 minutes" in panel


def test_a_bind_counts_once_whether_the_watch_or_the_binder_told_first(viewer_client, queue):
    """On a real API server the watch confirms most bound pods before the binder reports;
    extender binds and bind deadlines count too."""
    now = timezone.now() - timedelta(seconds=30)
    transition(1, "pod_confirmed", key="uid-a", from_state="Assumed", at=now)     # watch first
    transition(2, "pod_confirmed", key="uid-b", from_state="Assumed", at=now)
    transition(3, "pod_binding_finished", key="uid-b", cause="extender", from_state="Assumed",
               to_state="Assumed", at=now)                                       # both: once
    transition(4, "pod_forgotten", key="uid-c", cause="extender", at=now)        # bind refused
    transition(5, "pod_forgotten", key="uid-d", cause="bind deadline", at=now)
    transition(6, "pod_added", key="uid-e", from_state="Initial", at=now)        # not a bind
    binds = get(viewer_client, "/")[0].context["overview"].binds
    assert (binds.finished, binds.failed, binds.failure_percent) == (2, 2, 50)


def test_no_binds_is_said_plainly(viewer_client, queue):
    assert "no binds ended in the last 5 minutes" in binds_panel(get(viewer_client, "/")[1])
    assert read_model.BindHealth(0, 0, 0, 5).failure_percent == 0


@override_settings(REDIS_URL="unix:///nonexistent/schedview-test.sock")
def test_an_unreachable_redis_is_said_and_the_rest_still_shows(viewer_client):
    transition(1, "pod_forgotten", cause="bind", at=timezone.now())
    response, html = get(viewer_client, "/")
    assert response.context["overview"].binds.queued is None
    panel = binds_panel(html)
    assert "Redis unreachable" in panel and "1 of 1 bind failed" in panel
