"""`{% load gauges %}{{ usage|gauge }}`: a read_model.Usage drawn as a bar. The track is
allocatable, the thick bar requested, the thin one under it non-zero requested (when
known); red when more is requested than allocatable.

A filter rather than an included partial: the nodes table draws three or four a row,
and at 200 rows the includes were most of the page's time. Every value printed is a
number or a text Usage makes of numbers and its fixed unit, so nothing needs escaping.
"""
from django import template
from django.utils.safestring import mark_safe

register = template.Library()

NON_ZERO_TITLE = ("Non-zero requested: a container without a cpu or memory request counts "
                  "as 100m / 200Mi")


@register.filter
def gauge(usage):
    percent = usage.percent
    if usage.non_zero is None:
        label, height, thin, words = "", 12, "", ""
    else:
        label, height = f", {usage.non_zero_percent}% non-zero requested", 8
        thin = f'<rect class="gauge-non-zero" y="9" width="{usage.non_zero_shown}" height="3"/>'
        words = (f' <small class="non-zero" title="{NON_ZERO_TITLE}">non-zero '
                 f'{usage.non_zero_text}</small>')
    return mark_safe(
        f'<span class="gauge{" over" if usage.over else ""}">\n'
        f'  <svg viewBox="0 0 100 12" preserveAspectRatio="none" role="img" '
        f'aria-label="{percent}% of allocatable requested{label}">\n'
        f'    <rect class="gauge-track" width="100" height="12"/>\n'
        f'    <rect class="gauge-requested" width="{usage.shown}" height="{height}"/>\n'
        f'    {thin}\n'
        f'  </svg>\n'
        f'  <span class="bar-text">{usage.text} <small>({usage.percent_text})</small>{words}'
        f'</span>\n'
        f'</span>')
