"""A path no page serves gets our 404 page, in DEBUG too.

Django's DEBUG 404 page lists every URL pattern of the project: the embedded default runs
with DEBUG on, so any visitor learned the whole URLconf from a typo. The API answers its
own JSON 404s (`dashboard/web/api/unknown.py`); a page that says itself that something
is not there (an unknown pod or node, with its 404) is left as it is.
"""
from django.shortcuts import render

from dashboard.web.middleware.body_limit import API_PREFIX


def our_not_found(get_response):
    """Middleware: a 404 for a path that resolved to no view becomes templates/404.html.
    Inside CommonMiddleware, whose APPEND_SLASH redirect still applies."""

    def middleware(request):
        response = get_response(request)
        if (response.status_code == 404 and request.resolver_match is None
                and not request.path.startswith(API_PREFIX)):
            return render(request, "404.html", status=404)
        return response

    return middleware
