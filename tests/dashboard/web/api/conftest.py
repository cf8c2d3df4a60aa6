"""Fixtures for the REST API tests: tools with tokens, and a real cache owner."""
import pytest
from django.conf import settings
from django.test import Client

from simcluster.generate import make_node, make_pod

from dashboard.models import ApiToken, NodeRecord, PodRecord
from dashboard.wire.clients import redis_client
from tests.dashboard.web.api.apihelpers import OwnerThread, clear_commands
from tests.waiting import wait_for

NODES = ["node-a", "node-b"]
NAMESPACE = "team"


@pytest.fixture
def api(api_token):
    """A tool: no session, the operator's bearer token on every request."""
    return Client(HTTP_AUTHORIZATION=f"Bearer {api_token}")


@pytest.fixture
def viewer_api(viewer):
    """A tool whose token belongs to a user who may look but not act."""
    return Client(HTTP_AUTHORIZATION=f"Bearer {ApiToken.issue(viewer)[1]}")


@pytest.fixture
def owner(redis_url, transactional_db):
    """A real owner over two nodes, a bound pod `running` and pending pods `waiting-0..3`;
    yields once the read model holds them all. Bind tasks are queued in Redis, not run."""
    client = redis_client(settings.REDIS_URL)
    clear_commands(client)
    nodes = [make_node(name, zone=f"zone-{i}") for i, name in enumerate(NODES)]
    pods = [make_pod("running", namespace=NAMESPACE, uid="uid-running", node_name=NODES[0],
                     requests={"cpu": "100m", "memory": "64Mi"})]
    pods += [make_pod(f"waiting-{i}", namespace=NAMESPACE, uid=f"uid-waiting-{i}",
                      requests={"cpu": "200m", "memory": "128Mi"}) for i in range(4)]
    pods.append(make_pod("gpu-job", namespace=NAMESPACE, uid="uid-gpu-job",
                         requests={"cpu": "1", "memory": "4Gi", "nvidia.com/gpu": "64"}))
    with OwnerThread(client, nodes, pods) as running:
        wait_for(lambda: PodRecord.objects.count() == len(pods)
                 and NodeRecord.objects.count() == len(nodes), 30, "the read model")
        yield running
    clear_commands(client)
