"""The web's health doors: the banner every page carries, and the probes of the web process.

- The banner (`templates/dashboard/health.html#banner`) is in the base template, drawn
  with the page and fetched again every few seconds by htmx (`/health/banner/`), so it
  appears and goes on every page without a reload.
- `/healthz`: the process answers. `/readyz`: the database and Redis answer within 1 s
  (503 JSON with the cause otherwise). Neither needs a login: kubelets cannot log in.
- `/metrics`: the web process's own metrics and the latest health sample. It needs an
  API token (`Authorization: Bearer`, which Prometheus sends from `authorization:
  credentials_file`), since the web is the one process people reach from outside; the
  other processes serve theirs on SCHEDVIEW_PROBE_ADDRESS, where only the cluster does.
"""
from django.contrib.auth.decorators import login_not_required
from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.functional import SimpleLazyObject
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from dashboard.models import HealthSample
from dashboard.readmodel import health
from dashboard.web.api.auth import BearerToken
from dashboard.web.health import series as health_series

LEVEL_VALUE = {health.OK: 0, health.WARN: 1, health.FAIL: 2}


def health_context(request):
    """The banner's health, judged only when a template prints it (full pages), and only for
    a logged-in user (a page refused before the session is read, a 413, has none)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {"health": SimpleLazyObject(health.current)}


@require_GET
def banner(request):
    now = health.current()
    if request.GET.get("seen") == now.banner_digest:
        return HttpResponse(status=204)
    return render(request, "dashboard/health.html#banner", {"health": now})


@require_GET
def series(request):
    """The overview's charts' data for `?range=` (15m, 1h, 6h, 24h), as JSON."""
    try:
        return JsonResponse(health_series.series(
            request.GET.get("range", health_series.DEFAULT_RANGE)))
    except health_series.BadRange as exc:
        return JsonResponse({"error": str(exc)}, status=400)


@login_not_required
@require_GET
def healthz(request):
    return JsonResponse({"live": True})


@login_not_required
@require_GET
def readyz(request):
    cause = health.database_error() or health.redis_error()
    if cause:
        return JsonResponse({"ready": False, "error": cause}, status=503)
    return JsonResponse({"ready": True})


@login_not_required
@require_GET
def metrics(request):
    if BearerToken()(request) is None:
        response = JsonResponse({"error": "/metrics needs an API token: Authorization: "
                                          "Bearer <token> (manage.py apitoken <user>)"},
                                status=401)
        response["WWW-Authenticate"] = "Bearer"
        return response
    return HttpResponse(generate_latest(REGISTRY), content_type=CONTENT_TYPE_LATEST)


class HealthSampleMetrics(Collector):
    """The latest health sample (Celery beat takes one every SCHEDVIEW_SAMPLE_PERIOD):
    one row read per scrape, never a judgement of its own."""

    def describe(self):
        """What it exports, without reading the database (registration asks at import)."""
        return self._families(None)

    def collect(self):
        return self._families(
            HealthSample.objects.order_by("-at").only("at", "level", "problems").first())

    def _families(self, sample):
        level = GaugeMetricFamily("schedview_health_level",
                                  "The health by check: 0 ok, 1 warn, 2 fail", labels=["check"])
        age = GaugeMetricFamily("schedview_health_sample_age_seconds",
                                "Seconds since the latest health sample")
        if sample is not None:
            for check in health.CHECKS:
                level.add_metric([check], LEVEL_VALUE[sample.problems.get(check, health.OK)])
            age.add_metric([], (timezone.now() - sample.at).total_seconds())
        return [level, age]


REGISTRY.register(HealthSampleMetrics())
