"""Every API error is JSON `{"error": message}` with the status that says why.

Tools branch on the status (400 bad input, 401/403, 404, 409 a refused
transition, 413 a body too big, 503 no cache owner or no database) and show the message to
people; no error
ever comes back as an HTML page or a traceback.
"""
import logging

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.db import InterfaceError, OperationalError
from django.http import Http404
from ninja.errors import AuthenticationError, AuthorizationError, HttpError, ValidationError

from dashboard.web.middleware.body_limit import too_big_message
from dashboard.web.middleware.database_down import unavailable
from dashboard.wire.commands import CommandError

log = logging.getLogger(__name__)

UNAUTHENTICATED = ("authentication required: send 'Authorization: Bearer <token>' "
                   "or log in (with the CSRF token for changes)")


class ApiError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


OWNER_STATUSES = {400, 404, 409, 503}   # the owner's refusals a tool sees as they are


def owner_answer(ask, *args, **kwargs) -> dict:
    """Ask the cache owner (an action or a read), turning its refusal into the API's error
    with its status: 503 when no owner answers, 502 when it failed."""
    try:
        return ask(*args, **kwargs)
    except CommandError as exc:
        if exc.status == 503:
            raise ApiError(503, f"the cache owner is not answering ({exc.message}); "
                                f"is `manage.py watch` running?") from None
        if exc.status in OWNER_STATUSES:
            raise ApiError(exc.status, exc.message) from None
        raise ApiError(502, f"the cache owner failed: {exc.message}") from None


def _describe(error: dict) -> str:
    where = ".".join(str(part) for part in error.get("loc", ()) if part not in ("body", "query", "path"))
    return f"{where}: {error.get('msg', 'invalid')}" if where else error.get("msg", "invalid")


def install(api) -> None:
    """Register the handlers that give every failure the one JSON shape."""

    def reply(request, status, message, **extra):
        return api.create_response(request, {"error": message, **extra}, status=status)

    @api.exception_handler(ApiError)
    def api_error(request, exc):
        return reply(request, exc.status, exc.message)

    @api.exception_handler(ValidationError)
    def invalid(request, exc):
        details = [_describe(error) for error in exc.errors]
        return reply(request, 400, "; ".join(details) or "invalid request", detail=details)

    @api.exception_handler(AuthenticationError)
    def unauthenticated(request, exc):
        return reply(request, 401, UNAUTHENTICATED)

    @api.exception_handler(AuthorizationError)
    def forbidden(request, exc):
        return reply(request, 403, str(exc) or "forbidden")

    @api.exception_handler(Http404)
    def not_found(request, exc):
        return reply(request, 404, str(exc) or "not found")

    @api.exception_handler(SuspiciousOperation)
    def suspicious(request, exc):
        """A body over the limit (sent chunked, so measured once read; body_limit refuses a
        declared one first), too many fields: the request's fault, never a 500."""
        if isinstance(exc, RequestDataTooBig):
            return reply(request, 413, too_big_message(settings.SCHEDVIEW_MAX_BODY))
        return reply(request, 400, str(exc) or "malformed request")

    @api.exception_handler(HttpError)
    def http_error(request, exc):
        return reply(request, exc.status_code, str(exc))

    @api.exception_handler(OperationalError)
    @api.exception_handler(InterfaceError)
    def database_down(request, exc):
        return unavailable(request, exc)

    @api.exception_handler(Exception)
    def crashed(request, exc):
        log.exception("API %s %s failed", request.method, request.path)
        return reply(request, 500, "internal error (logged)")

