"""The zones page: the NodeTree's zones in tree order, with the round robin's position."""
from django.views.decorators.http import require_GET

from dashboard.readmodel import read_model
from dashboard.web.nodes import reads as node_reads
from dashboard.web.pages import render_page
from dashboard.web.past import views as past_views


@require_GET
@past_views.when_at(past_views.zones)
def zones(request):
    owner = read_model.owner_status()
    return render_page(request, "dashboard/zones.html", "zone-groups",
                   {"tree": node_reads.zones(owner), "owner": owner})
