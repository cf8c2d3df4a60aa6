"""The events page: the transition history, filtered, newest first."""
from django.views.decorators.http import require_GET

from dashboard.web.events import reads as event_reads
from dashboard.web.pages import render_page


@require_GET
def events(request):
    try:
        event_filter = event_reads.EventFilter.from_query(request.GET)
    except event_reads.BadEventFilter as exc:
        return render_page(request, "dashboard/events.html", "event-list",
                       dict(_EVENT_CHOICES, error=str(exc),
                            filter=event_reads.EventFilter()), status=400)
    return render_page(request, "dashboard/events.html", "event-list",
                   dict(_EVENT_CHOICES, events=event_reads.recent_events(event_filter),
                        filter=event_filter))

_EVENT_CHOICES = {"kinds": event_reads.KINDS, "causes": event_reads.CAUSES,
                  "rows_kept": event_reads.ROWS_KEPT}
