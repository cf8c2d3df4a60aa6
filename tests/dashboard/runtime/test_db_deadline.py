"""Deadlines for database work (dashboard/runtime/db_deadline.py): the watchdog alone, then
a real PostgreSQL behind the fault proxy (tests/faultproxy.py) that answers nothing."""
import asyncio
import threading
import time

import pytest
from django.db import OperationalError, connection
from django.db.backends.postgresql.base import DatabaseWrapper

from dashboard.runtime import db_deadline
from dashboard.runtime.db_deadline import BoundedStatements, NoAnswer, Watchdog, bounded
from tests.faultproxy import BLACKHOLE, CUT, PASS, FaultProxy
from tests.waiting import wait_for

SHORT = 0.3   # seconds of a deadline a test lets pass


# --- the watchdog ----------------------------------------------------------------------------
def test_the_watchdog_runs_what_passed_its_deadline_in_order_and_not_what_was_disarmed():
    watchdog, ran = Watchdog(), []
    late = watchdog.arm(0.2, lambda: ran.append("late"))
    watchdog.arm(0.05, lambda: ran.append("early"))
    kept = watchdog.arm(0.1, lambda: ran.append("disarmed"))
    assert watchdog.disarm(kept) is True
    wait_for(lambda: len(ran) == 2, 5, "both deadlines to pass")
    assert ran == ["early", "late"]
    assert watchdog.disarm(late) is False   # it had run


# --- a PostgreSQL behind the proxy -----------------------------------------------------------
@pytest.fixture
def proxied(db):
    """A second Django connection to the test database, through a fault proxy."""
    if connection.vendor != "postgresql":
        pytest.skip("deadlines bound PostgreSQL's sockets (DATABASE_URL=postgres://...)")
    target = (connection.settings_dict["HOST"] or "127.0.0.1",
              int(connection.settings_dict["PORT"] or 5432))
    with FaultProxy(target) as proxy:
        settings_dict = dict(connection.settings_dict, HOST="127.0.0.1", PORT=proxy.port)
        wrapper = DatabaseWrapper(settings_dict, alias="proxied")
        try:
            yield wrapper, proxy
        finally:
            wrapper.close()


def select_one(wrapper):
    with wrapper.cursor() as cursor:
        cursor.execute("SELECT 1")
        return cursor.fetchone()[0]


def test_a_database_that_answers_nothing_is_given_up_at_the_deadline(proxied):
    wrapper, proxy = proxied
    with bounded(wrapper, SHORT):
        assert select_one(wrapper) == 1
    proxy.set_mode(BLACKHOLE)
    started = time.monotonic()
    with pytest.raises(NoAnswer, match=f"no answer within {SHORT:g} s"):
        with bounded(wrapper, SHORT):
            select_one(wrapper)
    took = time.monotonic() - started
    assert SHORT <= took < SHORT + 1.5, took
    proxy.set_mode(PASS)
    wrapper.close()          # what Django does at the request's end with a broken one
    with bounded(wrapper, SHORT):
        assert select_one(wrapper) == 1


def test_a_cut_is_the_database_error_itself_not_a_missed_deadline(proxied):
    wrapper, proxy = proxied
    select_one(wrapper)
    proxy.set_mode(CUT)
    with pytest.raises(OperationalError) as raised:
        with bounded(wrapper, 5):
            select_one(wrapper)
    assert not isinstance(raised.value, NoAnswer)


def test_a_cut_before_the_sessions_timeout_is_set_is_djangos_error(proxied):
    """The timeout is set on a new session through the raw connection: a cut there is
    Django's OperationalError (a 503), as anywhere else, not psycopg's (a 500)."""
    wrapper, proxy = proxied
    wrapper.ensure_connection()
    proxy.set_mode(CUT)
    with wrapper.execute_wrapper(BoundedStatements(SHORT)):
        with pytest.raises(OperationalError):
            select_one(wrapper)


def test_a_slow_statement_is_cancelled_by_the_server_and_the_connection_stays_good(proxied):
    wrapper, _ = proxied
    with wrapper.execute_wrapper(BoundedStatements(SHORT)):
        with pytest.raises(OperationalError, match="statement timeout"):
            with wrapper.cursor() as cursor:
                cursor.execute("SELECT pg_sleep(3)")
        assert select_one(wrapper) == 1


def test_bounded_statements_give_up_a_silent_server_a_grace_after_the_timeout(proxied,
                                                                              monkeypatch):
    wrapper, proxy = proxied
    monkeypatch.setattr(db_deadline, "GRACE", 0.2)
    with wrapper.execute_wrapper(BoundedStatements(SHORT)):
        assert select_one(wrapper) == 1
        proxy.set_mode(BLACKHOLE)
        started = time.monotonic()
        with pytest.raises(NoAnswer):
            select_one(wrapper)
        assert time.monotonic() - started < SHORT + 0.2 + 1.5


def test_a_deadline_that_passes_as_the_block_ends_closes_the_connection(proxied,
                                                                        monkeypatch):
    """The watchdog fired but the block had its answer: the socket is shut, so the
    connection is closed rather than left to fail its next user."""
    wrapper, _ = proxied
    fired = threading.Event()
    real = db_deadline._shut_down
    monkeypatch.setattr(db_deadline, "_shut_down", lambda fd: (real(fd), fired.set()))
    with bounded(wrapper, 0.05):
        select_one(wrapper)
        assert fired.wait(5)
    assert wrapper.connection is None


@pytest.mark.parametrize("failure", ["SELECT * FROM no_such_table", "SELECT 1/0"])
def test_any_error_ending_the_block_takes_its_deadline_with_it(proxied, monkeypatch, failure):
    """A ProgrammingError or DataError is no OperationalError; its deadline left armed
    would shut, seconds later, whatever socket then held the fd (in CI: the test run's
    own connection, failing every test after it)."""
    wrapper, _ = proxied
    watchdog = Watchdog()
    monkeypatch.setattr(db_deadline, "_watchdog", watchdog)
    with pytest.raises(Exception) as raised:
        with bounded(wrapper, 5):
            select_one(wrapper)
            with wrapper.cursor() as cursor:
                cursor.execute(failure)
    assert not isinstance(raised.value, OperationalError)
    assert watchdog._armed == {}


@pytest.mark.django_db(transaction=True)
def test_the_webs_reads_outside_a_request_run_under_the_statement_bound(monkeypatch, settings):
    """A live socket's renders and an export's pages run no request middleware: wrapped
    in bounded_reads, their statements go through the same BoundedStatements."""
    from dashboard.web.live import hub

    settings.SCHEDVIEW_DB_STATEMENT_TIMEOUT = 3
    seen = []

    class Recording(db_deadline.BoundedStatements):
        def __call__(self, execute, sql, params, many, context):
            seen.append((self.seconds, sql))
            return execute(sql, params, many, context)

    monkeypatch.setattr(db_deadline, "BoundedStatements", Recording)

    def read():
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            return cursor.fetchone()[0]

    assert db_deadline.bounded_reads(read)() == 1
    assert seen == [(3, "SELECT 1")]
    read()                                   # unwrapped: not bounded
    assert len(seen) == 1
    # A live socket's render, as the hub runs it (in a worker thread of its own).

    class Member:
        render = staticmethod(read)

    assert asyncio.run(hub.render(Member())) == 1
    assert len(seen) == 2
