"""`{% load moments %}{{ some_datetime|when }}`: a moment as every page shows it.

One format everywhere: the viewer's local time with its zone named ("14:05:09 CET", the
date in front when it is not today), the UTC time on hover. The page prints the UTC time
inside a <time> element (what a page without JavaScript shows, and what the tests read);
static/moments.js rewrites it in the browser's zone, for pushed fragments too.
"""
from datetime import datetime, timezone

from django import template
from django.utils.html import format_html

register = template.Library()


@register.filter
def when(moment: datetime | None, precision: str = ""):
    """`|when` to the second; `|when:"ms"` to the millisecond (the events page, where
    the order of a burst's transitions shows in their milliseconds)."""
    if moment is None:
        return "–"
    utc = moment.astimezone(timezone.utc)
    shown = utc.strftime("%Y-%m-%d %H:%M:%S")
    if precision == "ms":
        shown += f".{utc.microsecond // 1000:03d}"
    marker = format_html(' data-moment="{}"', precision) if precision else " data-moment"
    return format_html('<time datetime="{}"{} title="{} UTC">{} UTC</time>',
                       utc.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                       marker, shown, shown)
