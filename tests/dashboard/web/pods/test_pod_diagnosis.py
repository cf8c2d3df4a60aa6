"""The pending pod's page says why it is not running: the owner's diagnosis over the
why-pending recording's cluster (tests/scheduling/why_pending), served by a real owner over
Redis, beside kube-scheduler's own last word from the pod's PodScheduled condition."""
import html as html_lib
import re

import pytest
from django.conf import settings

from simcluster.generate import make_node

from dashboard.wire.clients import redis_client
from dashboard.wire.keys import OWNER_STATUS
from tests.dashboard.web.conftest import serving_owner
from tests.decoded_feed import watched
from tests.dashboard.web.nodes.nodepages import get, report_owner, squash
from tests.scheduling import why_pending as why
from tests.scheduling.why_pending import BY_NAME, CASES
from tests.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def refused(name, said=True):
    """The case's pod, with the PodScheduled condition kube-scheduler wrote when `said`."""
    case = BY_NAME[name]
    pod = why.pending(case)
    if said:
        pod["status"] = {"phase": "Pending", "conditions": [case["pod_scheduled"]]}
    return pod


@pytest.fixture
def why_owner(redis_url, transactional_db):
    pods = [refused("cpu"), refused("preempt-helps", said=False), refused("missing-pvc")]
    with serving_owner([why.node(n) for n in CASES["nodes_before"]],
                       why.placed_pods() + pods) as owner:
        report_owner()      # the page asks only a live owner
        yield owner
        redis_client(settings.REDIS_URL).delete(OWNER_STATUS)


def section(html):
    found = re.search(r'<section id="pod-diagnosis".*?</section>', html, re.S)
    assert found, "no diagnosis section"
    return squash(html_lib.unescape(found.group(0)))


def test_the_summary_comes_first_and_kube_scheduler_agrees(why_owner, viewer_client):
    _, html = get(viewer_client, "/pods/uid-case-cpu/")
    assert html.index('id="pod-diagnosis"') < html.index('id="pod-live"')
    text = section(html)
    expected = BY_NAME["cpu"]["pod_scheduled"]["message"]
    assert f"<strong>{expected}</strong>" in text
    assert f'<q class="scheduler-word">{expected}</q>' in text and "the same as ours" in text


def test_the_nodes_are_grouped_by_reason_largest_first_each_a_link(why_owner, viewer_client):
    text = section(get(viewer_client, "/pods/uid-case-cpu/")[1])
    rows = re.findall(r'<tr><th scope="row">(.*?)</th><td class="num">(\d+)</td>', text)
    assert rows == [("Insufficient cpu", "4"), ("node(s) had untolerated taint(s)", "2"),
                    ("Too many pods", "1"), ("node(s) were unschedulable", "1")]
    assert '<a href="/nodes/gpu-0/">gpu-0</a>' in text
    assert "Insufficient cpu: asks 64, 0.4 free of 4" in text     # a closest node
    assert "preemption: 0/7 nodes are available: 7 Preemption is not helpful" in text


def test_preemption_that_helps_names_the_victims_and_nothing_is_evicted(why_owner,
                                                                        viewer_client):
    text = section(get(viewer_client, "/pods/uid-case-preempt-helps/")[1])
    assert "kube-scheduler has not written a PodScheduled condition" in text
    assert 'make room on <a href="/nodes/small-1/">small-1</a>' in text
    for i in range(3):
        assert f'<a href="/pods/uid-low-{i}/">why/low-{i}</a> (priority 100)' in text
    assert len(why_owner.cache.node_info("small-1").pods) == 3


def test_a_claim_the_cache_cannot_check_is_named_and_the_difference_shown(why_owner,
                                                                          viewer_client):
    text = section(get(viewer_client, "/pods/uid-case-missing-pvc/")[1])
    assert "differs from ours" in text
    assert 'Not checked from the cache: persistentvolumeclaim "no-such-claim"' in text


def test_a_placed_pod_has_no_diagnosis_and_without_an_owner_the_page_says_why(
        why_owner, viewer_client):
    assert 'id="pod-diagnosis"' not in get(viewer_client, "/pods/uid-low-0/")[1]
    redis_client(settings.REDIS_URL).delete(OWNER_STATUS)
    text = section(get(viewer_client, "/pods/uid-case-cpu/")[1])
    assert "The diagnosis comes from the cache owner: no live cache owner to ask." in text


def test_the_section_is_asked_for_again_and_follows_the_cache(why_owner, viewer_client):
    """The page polls /pods/<uid>/diagnosis/; a node that takes the pod, added meanwhile,
    shows in the next answer; a pod that is no longer pending gets an empty answer."""
    _, html = get(viewer_client, "/pods/uid-case-cpu/")
    assert ('hx-get="/pods/uid-case-cpu/diagnosis/" '
            'hx-trigger="htmx:wsAfterMessage from:#pod-socket, every 60s"') in html
    # as the watch would: a node big enough, applied by the owner's own thread
    big = make_node("big-0", cpu="128", memory="512Gi")
    why_owner.feed.put(watched("nodes", "ADDED", big))
    wait_for(lambda: "big-0" in get(viewer_client, "/pods/uid-case-cpu/diagnosis/")[1], 10,
             "the new node in the diagnosis")
    text = section(get(viewer_client, "/pods/uid-case-cpu/diagnosis/")[1])
    assert "1/8 nodes can take the pod now" in text
    _, placed = get(viewer_client, "/pods/uid-low-0/diagnosis/")
    assert placed.strip() == ""
