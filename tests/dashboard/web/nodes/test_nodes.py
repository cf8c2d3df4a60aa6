"""The nodes table and a node's page: aggregates drawn as bars, host ports, images (asked of
a real owner over Redis), pods, generation, deleted nodes marked; bad names answered."""
import re
from html import unescape

import pytest
from django.conf import settings

from schedcache import Cache

from dashboard.owner.commands import CommandServer
from dashboard.owner.owner import CacheOwner
from dashboard.readmodel import read_model
from dashboard.web.nodes import reads as node_reads
from dashboard.web.nodes.query import NodeFilters
from dashboard.wire.clients import redis_client
from dashboard.wire.keys import OWNER_COMMANDS, OWNER_STATUS
from tests.dashboard.web.nodes.nodepages import (
    GIB,
    MIB,
    get,
    node,
    pod,
    report_owner,
    resources,
    squash,
)

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def no_owner(redis_url):
    """No live owner unless a test reports one."""
    client = redis_client(settings.REDIS_URL)
    client.delete(OWNER_STATUS, OWNER_COMMANDS)
    yield
    client.delete(OWNER_STATUS, OWNER_COMMANDS)


def row(html, name):
    return squash(html.split(f'<tr id="node-{name}"')[1].split("</tr>")[0])


# --- the table ------------------------------------------------------------------------------
def test_the_table_draws_requested_non_zero_and_allocatable_for_each_resource(viewer_client):
    node("gpu-1", requested=resources(1000, 2 * GIB, **{"nvidia.com/gpu": 1}),
         non_zero=resources(1200, 3 * GIB),
         allocatable=resources(4000, 8 * GIB, 110, **{"nvidia.com/gpu": 4}), pods=11,
         generation=7)
    node("plain-1", requested=resources(5000, GIB), allocatable=resources(4000, 8 * GIB, 110))
    pod("a1", "Assumed", node="gpu-1")
    pod("a2", "Added", node="gpu-1")
    response, html = get(viewer_client, "/nodes/")
    rows = response.context["nodes"].rows
    assert [r.name for r in rows] == ["gpu-1", "plain-1"]
    assert rows[0].cpu == read_model.Usage(1.0, 4.0, "cores", 1.2)
    assert rows[0].pods == read_model.Usage(11, 110, "pods", digits=0)
    assert rows[0].extended == [("nvidia.com/gpu", read_model.Usage(1, 4, "", digits=0))]
    assert (rows[0].assumed, rows[0].generation) == (1, 7)
    gpu = row(html, "gpu-1")
    assert '<a href="/nodes/gpu-1/">gpu-1</a>' in gpu
    assert '<rect class="gauge-requested" width="25" height="8"/>' in gpu   # cpu 1 of 4
    assert '<rect class="gauge-non-zero" y="9" width="30" height="3"/>' in gpu   # 1.2 of 4
    assert "1.0 / 4.0 cores <small>(25%)</small>" in gpu and "non-zero 1.2" in gpu
    assert "11 / 110 pods" in gpu and "<small>nvidia.com/gpu</small>" in gpu
    assert "1 / 4 <small>(25%)</small>" in gpu
    over = row(html, "plain-1")
    assert '<span class="gauge over">' in over and 'width="100"' in over   # 125%, clipped
    assert "5.0 / 4.0 cores <small>(125%)</small>" in over


def test_nodes_deleted_with_pods_left_are_marked(viewer_client):
    node("kept")
    node("gone", "", -1, allocatable=resources(), pods=2, has_node=False)
    _, html = get(viewer_client, "/nodes/")
    gone = html.split('<tr id="node-gone" class="missing">')[1].split("</tr>")[0]
    assert "deleted, pods left" in gone
    assert "deleted" not in row(html, "kept")
    assert "1 deleted with pods left</span>" in html



def test_the_zone_picker_offers_each_zone_with_node_rows_once(viewer_client):
    """Read off the zones' totals (kept by triggers): a zone with rows in and out of the
    tree is offered once, one whose rows are all gone not at all."""
    node("b1", "region-1/zone-b")
    node("b2", "region-1/zone-b", -1, has_node=False, pods=1)
    node("a1", "region-1/zone-a")
    node("c1", "region-1/zone-c").delete()
    response, html = get(viewer_client, "/nodes/")
    assert response.context["zones"] == ["region-1/zone-a", "region-1/zone-b"]
    assert html.count('<option value="region-1/zone-b"') == 1

def test_nodes_are_paged_and_the_socket_knows_the_page(viewer_client, monkeypatch):
    monkeypatch.setattr(read_model, "NODES_PER_PAGE", 2)
    for name in ["n3", "n1", "n2"]:
        node(name)
    response, html = get(viewer_client, "/nodes/")
    assert [r.name for r in response.context["nodes"].rows] == ["n1", "n2"]
    assert "Page 1 of 2" in html and 'ws-connect="/ws/nodes/?"' in html
    response, html = get(viewer_client, "/nodes/?page=2")
    assert [r.name for r in response.context["nodes"].rows] == ["n3"]
    assert 'ws-connect="/ws/nodes/?page=2"' in html
    assert node_reads.page_names(NodeFilters(page=2)) == ["n3"]


def test_an_htmx_refresh_gets_the_table_alone(viewer_client):
    node("n1")
    _, whole = get(viewer_client, "/nodes/")
    _, fragment = get(viewer_client, "/nodes/", HTTP_HX_REQUEST="true")
    assert fragment.strip().startswith('<section id="node-table"') and "<html" not in fragment
    assert fragment.strip() in whole


# --- one node -------------------------------------------------------------------------------
def test_a_nodes_page_shows_its_aggregates_ports_and_pods(viewer_client):
    node("n1", "region-1/zone-b", 4, generation=42, pods=2, images=3,
         requested=resources(1500, GIB, ephemeral=GIB, **{"example.com/fpga": 2}),
         non_zero=resources(1600, GIB + 200 * MIB),
         allocatable=resources(4000, 8 * GIB, 110, ephemeral=10 * GIB, **{"example.com/fpga": 2}),
         host_ports=[("", "TCP", 80), ("10.0.0.1", "UDP", 53)])
    pod("p-assumed", "Assumed", node="n1", namespace="web", milli_cpu=500, memory=512 * MIB)
    pod("p-added", "Added", node="n1", namespace="web", milli_cpu=1000)
    pod("p-expired", "Expired", node="n1")          # left the node
    pod("p-elsewhere", "Added", node="n2")
    response, html = get(viewer_client, "/nodes/n1/")
    detail = response.context["node"]
    assert [label for label, _ in detail.resources] == [
        "CPU", "Memory", "Pods", "Ephemeral storage", "example.com/fpga"]
    assert detail.resources[1][1] == read_model.Usage(1.0, 8.0, "GiB", 1 + 200 / 1024)
    assert (detail.position, detail.pod_count) == (5, 2)
    assert detail.pod_states == [("Assumed", 1), ("Added", 1)]
    html = squash(html)
    assert "<dt>Place in the NodeTree</dt><dd>5</dd>" in html
    assert "<dt>Generation</dt><dd>42 <small>changed" in html
    assert "<dt>example.com/fpga</dt>" in html and "2 / 2 <small>(100%)</small>" in html
    assert "<code>0.0.0.0:80/TCP</code>" in html and "<code>10.0.0.1:53/UDP</code>" in html
    assert '<a href="/pods/p-assumed/">p-assumed</a>' in html
    assert '<a href="/pods/p-added/">p-added</a>' in html
    assert "p-expired" not in html and "p-elsewhere" not in html
    assert "0.5 cores" in html and "512 MiB" in html
    assert "3 images; their names come from the cache owner: no live owner to list them." in html
    assert 'ws-connect="/ws/nodes/n1/"' in html
    assert '<a href="/events/?node=n1">' in html


def test_a_deleted_node_still_holding_pods_is_marked(viewer_client):
    node("gone", "", -1, has_node=False, pods=1, allocatable=resources())
    pod("left", "Added", node="gone")
    response, html = get(viewer_client, "/nodes/gone/")
    assert response.context["node"].position == 0
    assert "deleted, pods left" in html and "not in the tree" in html


def test_the_owner_lists_the_nodes_images(viewer_client, served):
    """A real owner's cache holds the node; the page asks it over the run's Redis."""
    cache = Cache()
    owner = CacheOwner(cache, command_server=CommandServer({}))
    cache.add_node({"metadata": {"name": "n1", "resourceVersion": "1"},
                    "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                               "images": [{"names": ["registry.k8s.io/pause:3.10"],
                                           "sizeBytes": 700 * 1024},
                                          {"names": ["example.com/web:1"],
                                           "sizeBytes": 300 * MIB}]}})
    node("n1", images=2)
    report_owner()
    served(lambda: owner.commands.serve(timeout=0.05))
    response, html = get(viewer_client, "/nodes/n1/")
    assert response.context["node"].images == [
        node_reads.Image("example.com/web:1", 300, 1),
        node_reads.Image("registry.k8s.io/pause:3.10", 0, 1)]
    assert "<td><code>example.com/web:1</code></td><td class=\"num\">300 MiB</td>" in html


def test_an_owner_that_does_not_answer_leaves_the_image_names_out(viewer_client, monkeypatch):
    monkeypatch.setattr(node_reads, "IMAGES_TIMEOUT", 0.2)
    node("n1", images=4)
    report_owner()   # says it is live, but nobody serves the commands
    _, html = get(viewer_client, "/nodes/n1/")
    assert "4 images; their names come from the cache owner: the cache owner did not answer" in html


def test_the_owner_refuses_an_unknown_node():
    owner = CacheOwner(Cache(), command_server=CommandServer({}))
    with pytest.raises(Exception, match="not in the cache"):
        owner.commands.handlers["get_node"]({"name": "nope"}, "viewer")


@pytest.mark.parametrize("url, status, says", [
    ("/nodes/nowhere/", 404, "no node 'nowhere' in the cache"),
    ("/nodes/Bad_Name!/", 400, "is not a node name"),
    ("/nodes/" + "a" * 254 + "/", 400, "is not a node name"),
])
def test_bad_or_unknown_names_get_a_page_that_says_so(viewer_client, url, status, says):
    node("n1")
    _, html = get(viewer_client, url, status=status)
    assert says in unescape(html) and 'class="error"' in html and "ws-connect=\"/ws/nodes/" not in html


def test_pages_need_a_login(client):
    node("n1")
    for url in ["/nodes/", "/nodes/n1/"]:
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_only_get_is_served(viewer_client):
    node("n1")
    assert viewer_client.post("/nodes/n1/").status_code == 405


def test_resources_leave_out_what_the_node_neither_has_nor_is_asked_for():
    record = node("n1", requested=resources(100, GIB), allocatable=resources(1000, GIB, 10))
    labels = [label for label, _ in node_reads.resources(record)]
    assert labels == ["CPU", "Memory", "Pods"]
    assert re.fullmatch(node_reads.NODE_NAME, "ip-10-0-0-1.ec2.internal")


def test_requests_with_nothing_allocatable_read_as_over_commit():
    """A 64-GPU pod forced onto a node with no GPUs is an over-commit, not 0 %."""
    forced = read_model.Usage(64, 0, "", digits=0)
    assert forced.over and forced.shown == 100
    assert forced.percent_text == "over-commit: none allocatable"
    assert read_model.Usage(0, 0, "", digits=0).percent_text == "0%"
    assert read_model.Usage(1, 4, "", digits=0).percent_text == "25%"


def test_a_nodes_page_shows_its_labels_taints_and_conditions(viewer_client):
    node("g1", labels={"pool": "gpu", "kubernetes.io/os": "linux"}, unschedulable=True,
         taints=[{"key": "nvidia.com/gpu", "value": "", "effect": "NoSchedule"}],
         conditions=[{"type": "Ready", "status": "False", "reason": "KubeletNotReady",
                      "message": "container runtime is down"}])
    _, html = get(viewer_client, "/nodes/g1/")
    assert '<code class="label">nvidia.com/gpu:NoSchedule</code>' in html
    assert ('<a href="/nodes/?label=pool%3Dgpu"><code class="label">pool=gpu</code></a>'
            in html)
    assert "cordoned (unschedulable)" in html
    assert re.search(r"<th scope=\"row\">Ready</th><td>False</td><td>KubeletNotReady</td>"
                     r"<td class=\"wrap\">container runtime is down</td>", html)
