"""Request bodies over SCHEDVIEW_MAX_BODY bytes are refused with 413 before anything reads them.

Django's own limit (DATA_UPLOAD_MAX_MEMORY_SIZE) only counts form fields, and only when
something reads the body: the REST API then failed with a 500, and a page's form with a
400 saying nothing of size, while multipart file parts escaped the limit altogether. The
declared Content-Length is checked here, first, for every route. A body sent without
one (chunked) is measured by Django when read (the same limit, DATA_UPLOAD_MAX_MEMORY_SIZE):
`bad_request` (the pages' handler400) and the API's error handlers answer that 413 too.
"""
from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import JsonResponse
from django.shortcuts import render
from django.views import defaults

API_PREFIX = "/api/"


def too_big_message(limit: int) -> str:
    return f"the request body is over the limit of {limit:,} bytes"


class BodyLimitMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        limit = settings.SCHEDVIEW_MAX_BODY
        try:
            declared = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            declared = 0     # not a number: Django reads no body at all then
        if declared > limit:
            if request.path_info.startswith(API_PREFIX):
                return JsonResponse({"error": too_big_message(limit)}, status=413)
            return too_big_page(request)
        return self.get_response(request)


def too_big_page(request):
    return render(request, "413.html", {"message": too_big_message(settings.SCHEDVIEW_MAX_BODY)},
                  status=413)


def bad_request(request, exception):
    """handler400: a body found too big once read is a 413 page, anything else Django's 400."""
    if isinstance(exception, RequestDataTooBig):
        return too_big_page(request)
    return defaults.bad_request(request, exception)
