"""The overview: counts by state, generations, the owner, the comparer, binds, charts."""
from django.conf import settings
from django.views.decorators.http import require_GET

from dashboard.readmodel import read_model
from dashboard.web.health import series as health_series
from dashboard.web.pages import render_page
from dashboard.web.past import views as past_views


@require_GET
@past_views.when_at(past_views.overview)
def overview(request):
    overview = read_model.overview()
    return render_page(request, "dashboard/overview.html", "counts",
                   {"overview": overview, "owner": overview.owner,
                    "ranges": list(health_series.LABELS.items()), "default_range": health_series.DEFAULT_RANGE,
                    "sample_period": settings.SCHEDVIEW_SAMPLE_PERIOD})
