"""The events page: the transition history, filtered, newest first, paged back by cursor,
and its exports (`?format=csv` or `jsonl`)."""
from urllib.parse import urlencode

from django.views.decorators.http import require_GET

from dashboard.web.events import export as event_export
from dashboard.web.events import reads as event_reads
from dashboard.web.pages import render_page


@require_GET
def events(request):
    try:
        event_filter = event_reads.EventFilter.from_query(request.GET)
        before = event_reads.page_cut(request.GET)
        form = event_export.export_format(request.GET)
    except event_reads.BadEventFilter as exc:
        return render_page(request, "dashboard/events.html", "event-list",
                           dict(_EVENT_CHOICES, error=str(exc),
                                filter=event_reads.EventFilter()), status=400)
    if form:
        top = event_reads.page_top(event_reads.history_cursor(), before)
        return event_export.export(event_filter, top, form)
    page = event_reads.recent_events(event_filter, before)
    return render_page(request, "dashboard/events.html", "event-list", dict(
        _EVENT_CHOICES, events=page, filter=event_filter,
        older=_with(event_filter.query, before=page.next_before) if page.next_before else "",
        exports={each: _with(event_filter.query, before=before, format=each)
                 for each in event_export.FORMATS}))


def _with(query: str, **more) -> str:
    """A link's query string: the filter's, then `more` (a page's cut, an export's format)."""
    more = urlencode({name: value for name, value in more.items() if value})
    return "&".join(part for part in (query, more) if part)


_EVENT_CHOICES = {"kinds": event_reads.KINDS, "causes": event_reads.CAUSES,
                  "export_limit": event_export.EXPORT_LIMIT,
                  "rows_kept": event_reads.ROWS_KEPT}
