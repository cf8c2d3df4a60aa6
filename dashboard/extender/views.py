"""kube-scheduler's HTTP extender endpoints (urlPrefix .../extender/, verbs filter, bind,
preempt). The body goes to the cache owner as a command: the extender decides on the
owner's cache, in the owner's thread.

Errors as the seed has them: a user error (malformed body, unknown pod) is a 400 with
a clear message; a platform error (no owner) is logged and, for filter and bind,
reported inside the result body with HTTP 200, as kube-scheduler expects; preempt
answers 500.
"""
import logging

import orjson
from django.conf import settings
from django.http import JsonResponse
from django.contrib.auth.decorators import login_not_required
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from dashboard.feed.commands import CommandError, send

log = logging.getLogger(__name__)

_USER_ERRORS = (400, 404, 409)
_FAILED_FILTER = {"Nodes": None, "NodeNames": None, "FailedNodes": {},
                  "FailedAndUnresolvableNodes": {}}


def _forward(request, op, failed_result):
    try:
        body = orjson.loads(request.body)
    except orjson.JSONDecodeError as exc:
        return JsonResponse({"Error": f"the body is not JSON: {exc}"}, status=400)
    if not isinstance(body, dict):
        return JsonResponse({"Error": "the body must be a JSON object"}, status=400)
    try:
        return JsonResponse(send(op, body, actor="kube-scheduler",
                                 timeout=settings.SCHEDVIEW_EXTENDER_TIMEOUT))
    except CommandError as exc:
        if exc.status in _USER_ERRORS:
            return JsonResponse({"Error": exc.message}, status=400)
        log.error("extender %s failed: %s", op, exc)
        if failed_result is None:
            return JsonResponse({"Error": exc.message}, status=500)
        return JsonResponse(dict(failed_result, Error=exc.message))


# kube-scheduler calls these without a login: serve them where only the scheduler reaches.
@login_not_required
@csrf_exempt
@require_POST
def filter_nodes(request):
    return _forward(request, "extender_filter", _FAILED_FILTER)


@login_not_required
@csrf_exempt
@require_POST
def bind(request):
    return _forward(request, "extender_bind", {})


@login_not_required
@csrf_exempt
@require_POST
def preempt(request):
    return _forward(request, "extender_preempt", None)
