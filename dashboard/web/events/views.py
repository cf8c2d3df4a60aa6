"""The events page: the transition history, filtered, newest first."""
from urllib.parse import urlencode

from django.views.decorators.http import require_GET

from dashboard.web.events import reads as event_reads
from dashboard.web.pages import render_page


@require_GET
def events(request):
    try:
        event_filter = event_reads.EventFilter.from_query(request.GET)
        before = event_reads.page_cut(request.GET)
    except event_reads.BadEventFilter as exc:
        return render_page(request, "dashboard/events.html", "event-list",
                           dict(_EVENT_CHOICES, error=str(exc),
                                filter=event_reads.EventFilter()), status=400)
    page = event_reads.recent_events(event_filter, before)
    return render_page(request, "dashboard/events.html", "event-list", dict(
        _EVENT_CHOICES, events=page, filter=event_filter,
        older=_with(event_filter.query, before=page.next_before) if page.next_before else ""))


def _with(query: str, **more) -> str:
    """A page's query string: the filter's, and the page's cut."""
    return "&".join(part for part in (query, urlencode(more)) if part)

_EVENT_CHOICES = {"kinds": event_reads.KINDS, "causes": event_reads.CAUSES,
                  "rows_kept": event_reads.ROWS_KEPT}
