"""A request under /api/ that no operation serves answers in the API's JSON, never with
Django's HTML page (its debug page would list every URL) nor the framework's bare 405.

One middleware for every such answer, since an unknown path or method never reaches the
API's own handlers. Credentials are checked first: a caller without them gets the 401
every operation answers it, whatever the path or method (the API names nothing it has or
has not, not even which methods a path takes); others a 404 naming the docs, or the 405
with its Allow header.
"""
from django.http import JsonResponse

from dashboard.web.api.auth import is_caller
from dashboard.web.api.errors import UNAUTHENTICATED
from dashboard.web.middleware.body_limit import API_PREFIX
from dashboard.web.middleware.database_down import DATABASE_ERRORS, unavailable


def unknown_in_json(get_response):
    """Middleware: a 404 or 405 under /api/ that is not the API's own JSON."""

    def middleware(request):
        response = get_response(request)
        if (not request.path.startswith(API_PREFIX) or response.status_code not in (404, 405)
                or response.get("Content-Type", "").startswith("application/json")):
            return response
        try:
            known = is_caller(request)
        except DATABASE_ERRORS as error:     # the token's lookup
            return unavailable(request, error)
        if not known:
            return JsonResponse({"error": UNAUTHENTICATED}, status=401)
        path = request.path[:200]
        if response.status_code == 405:
            allowed = response.get("Allow", "")
            answer = JsonResponse({"error": f"{request.method} is not allowed on {path}; "
                                            f"allowed: {allowed}"}, status=405)
            answer["Allow"] = allowed
            return answer
        return JsonResponse({"error": f"no API endpoint {path} (see /api/v1/docs)"}, status=404)

    return middleware
