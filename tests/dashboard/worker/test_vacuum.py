"""The worker vacuums the tables the owner rewrites where autovacuum does not."""
import pytest
from django.db import connection

from dashboard.models import NodeRecord
from dashboard.worker import vacuum
from dashboard.worker.tasks import vacuum as vacuum_task

NODES = NodeRecord._meta.db_table

postgresql_only = pytest.mark.skipif(connection.vendor != "postgresql",
                                     reason="VACUUM and autovacuum are PostgreSQL's")


def query(sql, params=()):
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone() if cursor.description else None


def autovacuum_on() -> bool:
    return query("SELECT current_setting('autovacuum')::boolean")[0]


def vacuums_of(table) -> int:
    query("SELECT pg_stat_clear_snapshot()")
    return query("SELECT vacuum_count FROM pg_stat_user_tables WHERE relname = %s", [table])[0]


@pytest.fixture
def nodes_autovacuum():
    """Sets the node table's autovacuum_enabled; the option outlives the test's rows, so
    it is reset however the test ends."""
    def turn(enabled: bool):
        query(f'ALTER TABLE "{NODES}" SET (autovacuum_enabled = {str(enabled).lower()})')
    yield turn
    query(f'ALTER TABLE "{NODES}" RESET (autovacuum_enabled)')


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_a_table_with_autovacuum_turned_off_is_vacuumed(nodes_autovacuum):
    nodes_autovacuum(False)
    before = vacuums_of(NODES)
    assert NODES in vacuum_task()
    assert vacuums_of(NODES) == before + 1


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_the_tables_autovacuum_covers_are_left_to_it(nodes_autovacuum):
    nodes_autovacuum(True)
    uncovered = vacuum.uncovered_tables()
    # on a server with autovacuum off (this project's CI) no table is covered
    assert (NODES in uncovered) is not autovacuum_on()
    assert set(uncovered) <= {model._meta.db_table for model in vacuum.REWRITTEN}


@pytest.mark.skipif(connection.vendor == "postgresql", reason="the other databases")
@pytest.mark.django_db(transaction=True)
def test_other_databases_are_never_vacuumed():
    assert vacuum.vacuum_uncovered() == []
