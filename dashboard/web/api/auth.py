"""Who is calling the REST API: a tool with a bearer token, or the browser's session.

Tokens are looked up by digest (`ApiToken`) and refused once expired, or once their user
is deactivated or has another password (`ApiToken.refusal`). A session counts only with its
CSRF token on unsafe methods, so a page on another site cannot act through a
logged-in operator's browser.
"""
from datetime import timedelta
from functools import wraps

from django.db import connection
from django.http import JsonResponse
from django.utils import timezone
from ninja.security import HttpBearer, SessionAuth

from dashboard.models import ACT_PERMISSION, ApiToken
from dashboard.runtime.db_deadline import WHO_ASKS, bounded
from dashboard.web.api.errors import UNAUTHENTICATED, ApiError

LAST_USED_RESOLUTION = timedelta(minutes=1)


class BearerToken(HttpBearer):
    def authenticate(self, request, token):
        with bounded(connection, WHO_ASKS):
            row = (ApiToken.objects.select_related("user")
                   .filter(digest=ApiToken.digest_of(token)).first())
        now = timezone.now()
        if row is None or row.refusal(now):
            return None
        if row.last_used is None or now - row.last_used > LAST_USED_RESOLUTION:
            # A write per call would cost more than the call: a minute is close enough.
            ApiToken.objects.filter(pk=row.pk).update(last_used=now)
        request.user = row.user  # permission checks read request.user, as for sessions
        request.api_token = row  # the audit's door (`via`): this call came with a token
        return row.user


def via(request) -> str:
    """The door a call came through, as the audit names it: the token that authenticated it,
    not merely an Authorization header (a session may carry a token that failed)."""
    return "api token" if getattr(request, "api_token", None) is not None else "api session"


def require_act(request) -> None:
    """Refuse (403) a caller who may look but not act."""
    if not request.user.has_perm(ACT_PERMISSION):
        raise ApiError(403, f"acting on pods needs the {ACT_PERMISSION} permission")


class LoggedInSession(SessionAuth):
    """The browser's session. Only a logged-in session is held to its CSRF token: a call
    with no session (or a bad token) is unauthenticated, a 401 whatever its method, not a
    "CSRF check failed" 403."""

    def _get_key(self, request):
        if not request.user.is_authenticated:
            return None
        return super()._get_key(request)


bearer_token = BearerToken()
token_or_session = [bearer_token, LoggedInSession()]


def is_caller(request) -> bool:
    """Whether the API answers this caller at all: a good token or a logged-in session.
    (A session's CSRF token matters to the operations that change something.)"""
    return request.user.is_authenticated or bearer_token(request) is not None


def documents_for_callers(view):
    """The schema and docs (django-ninja's `docs_decorator`): shown only to a caller the API
    would answer, since they map every door it has."""
    @wraps(view)
    def guarded(request, *args, **kwargs):
        if not is_caller(request):
            return JsonResponse({"error": UNAUTHENTICATED}, status=401)
        return view(request, *args, **kwargs)
    return guarded
