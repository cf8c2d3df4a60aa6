"""The pool panel page (`/pools/`): the whole page, or for htmx only its panel partial,
which the websocket consumer pushes too."""
from django.views.decorators.http import require_GET

from dashboard.web.pages import render_page
from dashboard.web.pools.panel import panel


@require_GET
def pools_page(request):
    return render_page(request, "dashboard/pools.html", "pools-panel", {"panel": panel()})
