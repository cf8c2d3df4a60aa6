"""Vacuuming the tables the owner rewrites, where PostgreSQL's autovacuum does not.

Why: the owner updates a node's row each time a pod lands on or leaves it (at 200 events a
second, every row of 20,000 nodes about once a minute) and a pod's at each transition,
and pruning deletes transitions by the hundred thousand. Every update leaves a dead
version behind until a VACUUM reclaims it; with autovacuum off (this project's CI
machine runs so) nothing does, and the node table grew from 36 MB live to 413 MB in ten
minutes at 20,000 nodes, which every page's scan of the nodes then read (100-280 ms a
query, issue 26). A VACUUM also marks pages all-visible, which lets counts be answered
from an index alone. Where autovacuum covers a table this leaves it to autovacuum.
"""
from django.db import connection

from dashboard.models import NodeRecord, PodRecord, PodStateCount, Transition, ZoneTotal

# PodStateCount's and ZoneTotal's few rows are rewritten by every batch of rows (triggers)
REWRITTEN = (NodeRecord, PodRecord, PodStateCount, Transition, ZoneTotal)

# Whether autovacuum vacuums a table: on for the server and not turned off for the table
_COVERED = """
    SELECT current_setting('autovacuum')::boolean
           AND coalesce((SELECT option_value::boolean
                         FROM pg_options_to_table(c.reloptions)
                         WHERE option_name = 'autovacuum_enabled'), true)
    FROM pg_class c WHERE c.oid = %s::regclass"""


def uncovered_tables() -> list[str]:
    """The rewritten tables autovacuum leaves alone (none on a database but PostgreSQL)."""
    if connection.vendor != "postgresql":
        return []
    names = []
    with connection.cursor() as cursor:
        for model in REWRITTEN:
            cursor.execute(_COVERED, [model._meta.db_table])
            if not cursor.fetchone()[0]:
                names.append(model._meta.db_table)
    return names


def vacuum_uncovered() -> list[str]:
    """VACUUM each table autovacuum leaves alone; returns their names. Outside a
    transaction (VACUUM cannot run in one), one table at a time: a VACUUM takes no lock
    that stops the owner's writes or the pages' reads."""
    names = uncovered_tables()
    with connection.cursor() as cursor:
        for name in names:
            cursor.execute(f'VACUUM "{name}"')
    return names
