"""What a page says about a database error that is not a refused connection (the live
tests stage the faults: tests/live/test_live_database_down.py, ..._blackhole.py)."""
import psycopg
import pytest
from django.db import OperationalError

from dashboard.runtime.db_deadline import NoAnswer
from dashboard.web.middleware.database_down import describe


def raised_from(cause):
    error = OperationalError(str(cause))
    error.__cause__ = cause
    return error


@pytest.mark.parametrize("error, says", [
    (NoAnswer(6), "database not answering: no answer within 6 s"),
    (raised_from(psycopg.errors.QueryCanceled("canceling statement due to statement timeout")),
     "database busy: a query ran past 5 s (SCHEDVIEW_DB_STATEMENT_TIMEOUT) and was cancelled"),
    (raised_from(psycopg.OperationalError('connection to server at "10.0.0.1", port 5432 '
                                          'failed: Connection refused')),
     "database unreachable: Connection refused"),
])
def test_each_database_error_is_named(error, says, settings):
    settings.SCHEDVIEW_DB_STATEMENT_TIMEOUT = 5.0
    assert describe(error) == says
