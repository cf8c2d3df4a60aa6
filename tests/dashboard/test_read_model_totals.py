"""PodStateCount and ZoneTotal, kept by triggers on PodRecord's and NodeRecord's tables
(migration 0018): after any mix of the writer's upserts and deletes and the ORM's own, they
are the rows' group by, on whichever database the suite runs (the writer COPYs on
PostgreSQL, INSERTs on SQLite)."""
import random

import pytest
from django.db import connection
from django.db.models import Count

from dashboard.models import NodeRecord, PodRecord, PodStateCount, ZoneTotal
from dashboard.owner import projection
from dashboard.owner.batch import Batch
from dashboard.readmodel.read_model import PodCounts, node_totals, pod_counts

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


def written_at_random(seed, kind, keys, make_row, steps=30, deleted=0.2):
    """Batches of the writer's, each of half the `keys` (rows made by make_row(rng), or
    deleted at the rate `deleted`) under `kind` ("pods", "nodes"); yields (rng, step) after
    each, for the test's own writes and checks."""
    rng = random.Random(seed)
    for step in range(steps):
        batch = Batch()
        for key in rng.sample(keys, len(keys) // 2):
            getattr(batch, kind)[key] = None if rng.random() < deleted else make_row(rng)
        projection.write(batch)
        yield rng, step


def random_pod(rng):
    state = rng.choice(STATES)
    return row("pod", state, state == "Assumed" and rng.random() < 0.5)


def test_the_counts_follow_every_write_of_the_rows():
    uids = [f"pod-{i}" for i in range(60)]
    for rng, step in written_at_random(26, "pods", uids, random_pod):
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


def node_row(zone, index, has_node, cpu, memory):
    return {"zone": zone, "tree_index": index, "has_node": has_node, "generation": 1, "pods": 0,
            "requested": {"milli_cpu": cpu, "memory": memory}, "non_zero_requested": {},
            "allocatable": {"milli_cpu": 4000, "memory": 2 ** 33}, "host_ports": [],
            "images": 0, "labels": {}, "taints": [], "conditions": [], "unschedulable": False,
            "cpu_percent": 0, "memory_percent": 0, "gpu_percent": 0,
            "changed_at": "2026-11-30T10:00:00Z", "owner_epoch": 1}


def zones_summed() -> dict:
    sums = {}
    for node in NodeRecord.objects.all():
        key = (node.zone, node.tree_index >= 0)
        total = sums.setdefault(key, [0] * 6)
        for i, value in enumerate((1, 0 if node.has_node else 1, node.requested["milli_cpu"],
                                   node.allocatable["milli_cpu"], node.requested["memory"],
                                   node.allocatable["memory"])):
            total[i] += value
    return {key: tuple(total) for key, total in sums.items()}


def zones_totalled() -> dict:
    return {(t.zone, t.in_tree): (t.nodes, t.missing, t.cpu_requested, t.cpu_allocatable,
                                  t.memory_requested, t.memory_allocatable)
            for t in ZoneTotal.objects.all() if t.nodes}


def random_node(rng):
    return node_row(rng.choice(["zone-a", "zone-b", ""]), rng.choice([-1, 0, 1, 5]),
                    rng.random() < 0.8, rng.randrange(4000), rng.randrange(2 ** 32))


def test_the_zone_totals_follow_every_write_of_the_nodes_and_sum_to_the_overview():
    names = [f"node-{i}" for i in range(30)]
    for rng, step in written_at_random(20_000, "nodes", names, random_node, deleted=0.15):
        if step % 5 == 4:
            NodeRecord.objects.filter(name__in=rng.sample(names, 4)).update(has_node=False,
                                                                            zone="zone-c")
        assert zones_totalled() == zones_summed()
    totals = node_totals()
    assert totals["nodes"] == NodeRecord.objects.count() > 0
    assert totals["cpu_requested"] == sum(n.requested["milli_cpu"]
                                          for n in NodeRecord.objects.all())
