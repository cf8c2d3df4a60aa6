"""With DEBUG on, connections keep no log of statements; a test's capture still sees them."""
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext


def run_statements(n: int) -> None:
    with connection.cursor() as cursor:
        for _ in range(n):
            cursor.execute("SELECT 1")


@pytest.mark.django_db
def test_statements_are_not_kept_while_debug_is_on(settings):
    settings.DEBUG = True
    connection.queries_log.clear()
    run_statements(3)
    assert len(connection.queries_log) == 0


@pytest.mark.django_db
def test_a_capture_still_sees_every_statement(settings):
    settings.DEBUG = True
    with CaptureQueriesContext(connection) as captured:
        run_statements(3)
    assert [query["sql"] for query in captured.captured_queries] == ["SELECT 1"] * 3
