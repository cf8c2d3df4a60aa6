"""The schedule statuses pages: the list by state (live), one pod's reasons and victims;
a real owner with its extender on the run's Redis."""
import asyncio

import pytest
from channels.testing import WebsocketCommunicator

from simcluster.generate import make_pod

from dashboard.asgi import application
from dashboard.web.live.consumers import BAD_INPUT
from dashboard.web.statuses import status_reads
from tests.dashboard.owner.extender.statusworld import NAMESPACE, filter_call, scheduled  # noqa: F401
from tests.dashboard.web.nodes.nodepages import squash

pytestmark = pytest.mark.timeout(60)


def test_the_list_shows_every_tracked_pod_with_its_state(viewer_client, scheduled):
    response = viewer_client.get("/statuses/")
    html = response.content.decode()
    assert response.status_code == 200
    for name, state in (("huge", "Waiting"), ("placed", "Binding"), ("vip", "Preempting")):
        assert f'href="/statuses/{NAMESPACE}/{name}/"' in html
        assert f'<span class="state sched-{state.lower()}">{state}</span>' in html
    assert "1 node: Insufficient cpu" in html           # the waiting pod's reasons, counted
    assert "1 on n1" in html                            # the preemptor's victims
    assert 'ws-connect="/ws/statuses/"' in html and 'aria-current="page">Statuses' in html


def test_the_list_filters_by_state_and_htmx_gets_the_section(viewer_client, scheduled):
    response = viewer_client.get("/statuses/", {"state": "Waiting"}, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="status-list"')
    assert "<h2>1 Waiting pod</h2>" in html and "/statuses/team/huge/" in html
    assert "/statuses/team/placed/" not in html
    assert 'ws-connect="/ws/statuses/?state=Waiting"' in html


@pytest.mark.parametrize("query, message", [({"state": "Sleeping"}, "state must be one of"),
                                            ({"page": "-1"}, "page must be a whole number")])
def test_a_bad_filter_is_a_400_page_saying_why(viewer_client, scheduled, query, message):
    response = viewer_client.get("/statuses/", query)
    assert response.status_code == 400
    assert message in response.content.decode()


def test_one_pod_shows_its_reasons_by_node_and_its_victims(viewer_client, scheduled):
    huge = viewer_client.get(f"/statuses/{NAMESPACE}/huge/").content.decode()
    for reason, node in (("Insufficient cpu", "n1"),
                         ("node(s) had untolerated taint {dedicated: infra}", "n2")):
        # One row per reason: its count, and its nodes (open: few) linked to their pages.
        assert (f'<td class="reason">{reason}</td><td class="num">1</td> <td><details '
                f'class="reason-nodes" open> <summary>1 node</summary> <ul><li><a '
                f'href="/nodes/{node}/">{node}</a></li></ul>') in squash(huge)
    assert "No wait reasons" not in huge
    vip = viewer_client.get(f"/statuses/{NAMESPACE}/vip/").content.decode()
    assert "team/low" in vip and "Preempting" in vip


def test_an_untracked_pod_is_a_404_page(viewer_client, scheduled):
    response = viewer_client.get(f"/statuses/{NAMESPACE}/nobody/")
    assert response.status_code == 404
    assert "tracks no pod team/nobody" in response.content.decode()


def test_without_an_owner_the_page_says_so(viewer_client, redis_url, monkeypatch):
    monkeypatch.setattr(status_reads, "TIMEOUT", 0.3)
    response = viewer_client.get("/statuses/")
    assert response.status_code == 503
    assert "did not answer" in response.content.decode()


def test_the_pages_need_a_login(client, scheduled):
    response = client.get("/statuses/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


# --- live -------------------------------------------------------------------------------------
async def connect(path, headers):
    communicator = WebsocketCommunicator(application, path, headers=headers)
    connected, code = await communicator.connect()
    return communicator, connected, code


@pytest.mark.asyncio
async def test_the_list_is_pushed_again_when_a_status_changes(scheduled, ws_headers):
    socket, connected, _ = await connect("/ws/statuses/?state=Waiting", ws_headers)
    assert connected
    try:
        first = await socket.receive_from(timeout=10)       # the first flush seen
        assert "<h2>1 Waiting pod</h2>" in first
        # A pod starts waiting: no cache event, only the statuses' version moves.
        await asyncio.to_thread(filter_call, scheduled, make_pod(
            "giant", namespace=NAMESPACE, uid="uid-giant", requests={"cpu": "99"}))
        pushed = await socket.receive_from(timeout=10)
        while "giant" not in pushed:
            pushed = await socket.receive_from(timeout=10)
        assert "<h2>2 Waiting pods</h2>" in pushed
        # The rows, never the element carrying ws-connect: htmx swapping that in opens
        # a new socket each push (the page reconnected about 15 times a second).
        assert pushed.lstrip().startswith('<div id="status-rows"')
        assert "ws-connect" not in pushed
    finally:
        await socket.disconnect()


@pytest.mark.asyncio
@pytest.mark.parametrize("path", ["/ws/statuses/?state=Sleeping", "/ws/statuses/?page=0"])
async def test_a_socket_asking_for_a_bad_filter_is_closed(redis_url, ws_headers, path):
    socket, connected, code = await connect(path, ws_headers)
    assert not connected and code == BAD_INPUT


@pytest.mark.asyncio
async def test_an_anonymous_socket_is_closed(redis_url):
    socket, connected, code = await connect(
        "/ws/statuses/", [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")])
    assert not connected and code == 4401
