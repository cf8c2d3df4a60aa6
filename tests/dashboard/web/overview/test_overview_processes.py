"""The overview names the leading cache owner (from the lease) and, under `manage.py up`,
the supervisor's children with their restarts."""
import pytest
from django.conf import settings

from dashboard.owner.leader import LeaderLease
from dashboard.runtime import supervised
from dashboard.wire.clients import redis_client
from dashboard.wire.keys import OWNER_LEASE, SUPERVISOR_CHILDREN
from tests.dashboard.web.nodes.nodepages import get, squash

pytestmark = pytest.mark.django_db


@pytest.fixture
def store(redis_url):
    client = redis_client(settings.REDIS_URL)
    client.delete(SUPERVISOR_CHILDREN, OWNER_LEASE)
    yield client
    client.delete(SUPERVISOR_CHILDREN, OWNER_LEASE)


def owner_panel(html):
    return squash(html.split('<section class="panel" id="owner-status">')[1].split("</section>")[0])


def test_the_overview_names_the_owner_holding_the_lease(viewer_client, store):
    assert "Leading: <strong>no owner holds the lease</strong>" in owner_panel(
        get(viewer_client, "/")[1])
    lock = LeaderLease(store, holder="owner-b")
    assert lock.try_acquire()
    assert "Leading: <strong>owner-b</strong>" in owner_panel(get(viewer_client, "/")[1])


def test_the_overview_lists_the_supervised_processes_and_their_restarts(viewer_client, store):
    assert 'id="processes"' not in get(viewer_client, "/")[1]     # outside `manage.py up`
    supervised.publish(store, [
        {"name": "owner-a", "pid": 41, "started": 1.0e9, "restarts": 0, "last_restart": None,
         "last_exit": None},
        {"name": "worker", "pid": 52, "started": 1.0e9, "restarts": 2,
         "last_restart": 1.7e9, "last_exit": -9, "probe": "127.0.0.1:41234"}])
    response, html = get(viewer_client, "/")
    children = response.context["overview"].processes.children
    assert [(c.name, c.pid, c.restarts, c.last_exit) for c in children] == [
        ("owner-a", 41, 0, None), ("worker", 52, 2, -9)]
    panel = squash(html.split('<section class="panel" id="processes">')[1].split("</section>")[0])
    assert ('<th scope="row">owner-a</th><td class="num">41</td><td class="num">0</td> '
            '<td><span class="muted">–</span></td>') in panel
    # Its metrics are a link away, and a restart says when (in the one time format).
    assert ('<th scope="row">worker</th><td class="num">52</td><td class="num">2</td> '
            '<td><a href="http://127.0.0.1:41234/metrics">/metrics</a></td>') in panel
    assert ('restarted <time datetime="2023-11-14T22:13:20.000Z" data-moment '
            'title="2023-11-14 22:13:20 UTC">2023-11-14 22:13:20 UTC</time>, exit code -9') in panel
