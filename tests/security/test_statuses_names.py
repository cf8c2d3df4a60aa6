"""The statuses pages link to and show a tracked pod whatever its namespace and name hold:
"/", "%", spaces and markup make a URL segment of their own, never a 500."""
import re
from html import escape, unescape

import pytest
from django.conf import settings

from simcluster.generate import make_node, make_pod

from dashboard.clients.owner_client import send
from dashboard.wire.clients import redis_client
from tests.dashboard.owner.extender.statusworld import filter_call
from tests.dashboard.web.api.apihelpers import OwnerThread, clear_commands
from tests.waiting import wait_for

pytestmark = pytest.mark.timeout(60)

ODD = [("a/b", "c/d"), ("team", "50% <b>"), ("team", "..")]


@pytest.fixture
def odd_statuses(redis_url, transactional_db):
    """A real owner tracking a Waiting pod under each of the ODD names."""
    client = redis_client(settings.REDIS_URL)
    clear_commands(client)
    pods = [make_pod(name, namespace=namespace, uid=f"uid-odd-{i}", requests={"cpu": "64"})
            for i, (namespace, name) in enumerate(ODD)]
    with OwnerThread(client, [make_node("n1")], pods) as owner:
        wait_for(lambda: send("status", timeout=5)["synced"], 30, "the owner")
        for pod in pods:
            filter_call(owner, pod, nodes=("n1",))
        yield
    clear_commands(client)


def test_the_list_links_every_pod_and_each_link_leads_to_it(viewer_client, odd_statuses):
    listing = viewer_client.get("/statuses/")
    assert listing.status_code == 200
    html = listing.content.decode()
    assert "<b>" not in html
    assert 'href="/statuses/a%252Fb/c%252Fd/"' in html
    links = [unescape(link) for link in re.findall(r'href="(/statuses/[^"?]+/[^"?]+/)"', html)]
    shown = set()
    for link in links:
        page = viewer_client.get(link)
        assert page.status_code == 200, link
        shown |= {(ns, name) for ns, name in ODD
                  if escape(f"{ns}/{name}") in page.content.decode()}
    assert len(links) == len(ODD) and shown == set(ODD)


def test_a_single_encoded_slash_is_no_pod(viewer_client, odd_statuses):
    """%2F arrives as "/" (the server decodes the path once): a path of more segments."""
    assert viewer_client.get("/statuses/a%2Fb/c%2Fd/").status_code == 404
