"""Every page of this part costs a fixed number of queries, whatever the cluster's size."""
from datetime import timedelta

import pytest
from django.core.cache import cache

from dashboard.models import PodRecord
from dashboard.readmodel import health
from tests.dashboard.web.nodes.nodepages import T0, get, node, sample, transition

pytestmark = pytest.mark.django_db
HEALTH = 7   # the health banner's checks (dashboard/readmodel/health.py), on every page: fixed too
SCRUBBER = 1   # the header scrubber's span (readmodel/moment.py kept_range), on every page


@pytest.fixture(autouse=True)
def _redis(redis_url):
    """The pages read the owner's status from Redis."""


@pytest.mark.parametrize("url, queries", [("/", 7), ("/nodes/", 4), ("/nodes/n1/", 3),
                                          ("/heatmap/", 1), ("/pods/", 4),
                                          ("/zones/", 2), ("/snapshot/", 6), ("/events/", 2)])
def test_queries_do_not_grow_with_the_rows(viewer_client, django_assert_num_queries, url,
                                           queries):
    """Counts are SQL aggregates and lists are pages: as many queries for 300 pods, 30 nodes
    and 300 transitions as for a few (plus four for the session, the user and their
    permissions, the health banner's and the scrubber's)."""
    PodRecord.objects.bulk_create(
        PodRecord(uid=f"u{i}", namespace="default", name=f"p{i:03}", node=f"n{i % 30}",
                  state=["Pending", "Assumed", "Added"][i % 3]) for i in range(300))
    for i in range(30):
        node(f"n{i}", f"region-1/zone-{'abc'[i % 3]}", i, generation=i)
    for seq in range(1, 301):
        transition(seq, node=f"n{seq % 30}")
    sample(3, T0)
    sample(9, T0 + timedelta(seconds=1))
    get(viewer_client, "/")    # the session's first load
    cache.delete(health.CURRENT_KEY)   # the health judged again, not the first load's
    with django_assert_num_queries(queries + HEALTH + SCRUBBER + 4):
        get(viewer_client, url)
