"""PodStateCount, kept by triggers on PodRecord's table (migration 0018): after any mix of
the writer's upserts and deletes and the ORM's own, the counts are the rows' group by, on
whichever database the suite runs (the writer COPYs on PostgreSQL, INSERTs on SQLite)."""
import random

import pytest
from django.db import connection
from django.db.models import Count

from dashboard.models import PodRecord, PodStateCount
from dashboard.owner import projection
from dashboard.owner.batch import Batch
from dashboard.readmodel.read_model import PodCounts, pod_counts

pytestmark = pytest.mark.django_db(transaction=True)

STATES = ["Pending", "Assumed", "Added", "Expired", "Forgotten"]


def row(uid, state, finished):
    return {"namespace": "team", "name": uid, "node": "n1", "zone": "", "state": state,
            "binding_finished": finished, "assumed_at": None, "deadline": None,
            "phase": "Running", "resource_version": "1", "labels": {}, "milli_cpu": 0,
            "memory": 0, "scalar_resources": {}, "priority": 0, "seq": 1,
            "changed_at": "2026-11-30T10:00:00Z", "owner_epoch": 1}


def rows_grouped() -> dict:
    return {(r["state"], r["binding_finished"]): r["n"]
            for r in PodRecord.objects.order_by().values("state", "binding_finished")
            .annotate(n=Count("*"))}


def counted() -> dict:
    return {(c.state, c.binding_finished): c.n for c in PodStateCount.objects.all() if c.n}


def test_the_counts_follow_every_write_of_the_rows():
    rng = random.Random(26)
    uids = [f"pod-{i}" for i in range(60)]
    for step in range(40):
        batch = Batch()
        for uid in rng.sample(uids, 25):
            state = rng.choice(STATES)
            batch.pods[uid] = (None if rng.random() < 0.2
                               else row(uid, state, state == "Assumed" and rng.random() < 0.5))
        projection.write(batch)
        if step % 5 == 4:        # the ORM's writes count too: one door, whoever writes
            PodRecord.objects.filter(uid__in=rng.sample(uids, 5)).update(state="Expired",
                                                                         binding_finished=False)
            PodRecord.objects.filter(uid__in=rng.sample(uids, 3)).delete()
        assert counted() == rows_grouped()
    assert sum(counted().values()) == PodRecord.objects.count() > 0


def test_the_overview_reads_the_counts_and_a_prune_keeps_them():
    projection.write(Batch(pods={"a": row("a", "Assumed", True), "b": row("b", "Assumed", False),
                                 "c": row("c", "Added", False), "d": row("d", "Pending", False)}))
    assert pod_counts() == PodCounts(pending=1, assumed=2, binding_finished=1, added=1)
    PodRecord.objects.filter(uid="c").update(owner_epoch=2)
    projection.write(Batch(prune_epoch=2))           # a new owner's sync drops the others' rows
    assert pod_counts() == PodCounts(added=1)
    assert counted() == rows_grouped()


def test_emptying_the_rows_empties_the_counts_and_they_start_again_from_zero():
    projection.write(Batch(pods={"a": row("a", "Added", False)}))
    table = connection.ops.quote_name(PodRecord._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {table}" if connection.vendor == "sqlite"
                       else f"TRUNCATE {table}")
    assert counted() == {}
    projection.write(Batch(pods={"b": row("b", "Added", False)}))
    assert counted() == {("Added", False): 1}
