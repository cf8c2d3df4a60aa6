"""kube-scheduler's HTTP extender endpoints on the web (urlPrefix .../extender/, verbs
filter, bind, preempt). The body goes to the cache owner as a command over Redis: the
extender decides on the owner's cache, in the owner's thread. The owner serves the same
verbs on its own listener without the Redis hop (`listener.py`); both answer by the
rules in `answers.py`.
"""
from django.conf import settings
from django.http import JsonResponse
from django.contrib.auth.decorators import login_not_required
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from dashboard.feed.commands import send

from .answers import ACTOR, answer


def _send(op, body):
    return send(op, body, actor=ACTOR, timeout=settings.SCHEDVIEW_EXTENDER_TIMEOUT)


def _forward(request, op):
    status, body = answer(op, request.body, _send)
    return JsonResponse(body, status=status)


# kube-scheduler calls these without a login: serve them where only the scheduler reaches.
@login_not_required
@csrf_exempt
@require_POST
def filter_nodes(request):
    return _forward(request, "extender_filter")


@login_not_required
@csrf_exempt
@require_POST
def bind(request):
    return _forward(request, "extender_bind")


@login_not_required
@csrf_exempt
@require_POST
def preempt(request):
    return _forward(request, "extender_preempt")
