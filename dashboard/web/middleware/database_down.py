"""A database that is down, answered at once and by name: a 503 naming the cause.

Without this a page or an API call waited for every query's connection attempt (a
pool's 30 s each: 270 s for the overview) and then said "internal error". Now the
first OperationalError or InterfaceError of a request ends it: an HTML page, or
`{"error": ...}` under /api/, "database unreachable: <cause>", with Retry-After.
The cause is libpq's last words ("Connection refused", "timeout expired"), not the
server's address. When the pool only says it had no connection in time, one direct
connection attempt tells whether the database is down (and why) or merely busy.
`GET /api/v1/health` answers its health document all the same (the database check
failing), so that tools reading it always get the shape they parse (issue 22).

A database that accepts connections and answers nothing is bounded too (issue 22: a REST
read hung 29.7 s): every statement of a request runs under SCHEDVIEW_DB_STATEMENT_TIMEOUT
(dashboard/runtime/db_deadline.py), and the 503 says "database not answering".
"""
import logging

import psycopg
from django.conf import settings
from django.db import connection, connections
from django.http import HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.urls import reverse
from psycopg_pool import PoolTimeout

from dashboard.readmodel import health
from dashboard.runtime.db_deadline import (
    DATABASE_ERRORS,
    WHO_ASKS,
    BoundedStatements,
    NoAnswer,
    bounded,
)

log = logging.getLogger(__name__)

PROBE_TIMEOUT = 2        # seconds (libpq's least) for the direct attempt after a pool timeout
RETRY_AFTER = 5          # seconds a client should wait
HEALTH_URL = "api-v1:health"   # GET /api/v1/health (dashboard/web/api/health.py)


def _last_words(error: BaseException) -> str:
    """The end of libpq's message, without the host and port it names first."""
    text = (str(error).strip().splitlines() or [type(error).__name__])[0]
    return text.rsplit("failed: ", 1)[-1].strip() or type(error).__name__


def _probe(alias: str) -> str | None:
    """Why a pool had no connection: try one directly (None: the database answers)."""
    params = dict(connections[alias].get_connection_params(), connect_timeout=PROBE_TIMEOUT)
    try:
        psycopg.connect(**params).close()
    except psycopg.Error as error:
        return _last_words(error)
    return None


def describe(error: BaseException, alias: str = "default") -> str:
    """What a page says about a database error."""
    if isinstance(error, NoAnswer):
        return f"database not answering: {error}"
    cause = error.__cause__ or error
    if isinstance(cause, psycopg.errors.QueryCanceled):
        return (f"database busy: a query ran past {settings.SCHEDVIEW_DB_STATEMENT_TIMEOUT:g} s "
                "(SCHEDVIEW_DB_STATEMENT_TIMEOUT) and was cancelled")
    if isinstance(cause, PoolTimeout):
        down = _probe(alias)
        if down is None:
            return ("database busy: no pooled connection was free in time "
                    "(SCHEDVIEW_DB_POOL_TIMEOUT)")
        return f"database unreachable: {down}"
    return f"database unreachable: {_last_words(cause)}"


def unavailable(request, error: BaseException) -> HttpResponse:
    message = describe(error)
    log.warning("%s %s: %s (%s)", request.method, request.path, message, error)
    if request.method == "GET" and request.path == reverse(HEALTH_URL):
        response = JsonResponse(health.database_down(message).as_dict(), status=503)
    elif request.path.startswith("/api/"):
        response = JsonResponse({"error": message}, status=503)
    else:
        response = HttpResponse(render_to_string("database_unavailable.html",
                                                 {"message": message}), status=503)
    response["Retry-After"] = str(RETRY_AFTER)
    return response


def bounded_statements(get_response):
    """Before SessionMiddleware, so the session's reads and saves are bounded too: every
    statement of the request within SCHEDVIEW_DB_STATEMENT_TIMEOUT, and a database error
    met outside the view (a session saved as the response leaves) is the same 503."""
    def middleware(request):
        with connection.execute_wrapper(
                BoundedStatements(settings.SCHEDVIEW_DB_STATEMENT_TIMEOUT)):
            try:
                return get_response(request)
            except DATABASE_ERRORS as error:
                return unavailable(request, error)
    return middleware


class DatabaseDownMiddleware:
    """After AuthenticationMiddleware: loads the session's user itself (the first query of
    most requests, which would otherwise fail inside a later middleware), and turns a
    view's database error into the 503 (process_exception)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        try:
            if settings.SESSION_COOKIE_NAME in request.COOKIES:   # else nothing to look up
                with bounded(connection, WHO_ASKS):
                    request.user.is_authenticated
            else:
                request.user.is_authenticated
        except DATABASE_ERRORS as error:
            return unavailable(request, error)
        return self.get_response(request)

    def process_exception(self, request, exception):
        if isinstance(exception, DATABASE_ERRORS):
            return unavailable(request, exception)
        return None
