"""The pod page's scheduling section: labels from the read model; node selector,
affinity, tolerations and the cached pod's YAML from a real owner over Redis."""
import re

import pytest
import yaml
from django.conf import settings

from dashboard.wire.clients import redis_client
from dashboard.wire.keys import OWNER_STATUS
from tests.dashboard.web.nodes.nodepages import report_owner


@pytest.fixture
def live_owner(real_owner):
    report_owner()     # the page asks only a live owner
    yield real_owner
    redis_client(settings.REDIS_URL).delete(OWNER_STATUS)


def test_the_pod_page_shows_what_the_cache_holds_of_its_spec(live_owner, viewer_client):
    _, uids = live_owner
    html = viewer_client.get(f"/pods/{uids['web']}/").content.decode()
    cached = yaml.safe_load(re.search(r'<summary>The cached pod as YAML.*?</summary>'
                                      r'<pre class="yaml">(.*?)</pre>', html, re.S)
                            .group(1).replace("&#x27;", "'").replace("&quot;", '"'))
    assert cached["metadata"]["uid"] == uids["web"] and cached["spec"]["nodeName"] == "n1"
    assert len(cached["spec"]["tolerations"]) == 2    # the API server's defaults, kept
    for toleration in cached["spec"]["tolerations"]:
        assert f"<code>{toleration['key']}</code>" in html
    assert 'Requests</dt><dd>0.5 cores, 256 MiB; priority 0</dd>' in html
    assert '<a href="/nodes/n1/">n1</a>' in html


def test_without_a_live_owner_the_page_says_where_the_spec_would_come_from(real_owner,
                                                                           viewer_client):
    _, uids = real_owner
    redis_client(settings.REDIS_URL).delete(OWNER_STATUS)
    html = viewer_client.get(f"/pods/{uids['web']}/").content.decode()
    assert "come from the cache owner: no live cache owner to ask." in html
