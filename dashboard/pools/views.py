"""The pool panel page (`/pools/`): the whole page, or for htmx only its panel partial,
which the websocket consumer pushes too."""
from django.shortcuts import render
from django.views.decorators.http import require_GET

from dashboard.pools.panel import panel


@require_GET
def pools_page(request):
    template = "dashboard/pools.html#pools-panel" if request.htmx else "dashboard/pools.html"
    return render(request, template, {"panel": panel()})
