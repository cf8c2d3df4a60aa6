"""How every page answers: the whole page, or for an htmx request only the partial the page
is built from, so a page and its fragment never differ. The pages themselves are in the
web's subpackages by what they show (overview, nodes, zones, snapshot, events, pods, ...)."""
from django.shortcuts import render

from dashboard.readmodel import read_model


def render_page(request, template: str, partial: str, context: dict, status: int = 200):
    if request.htmx:
        return render(request, f"{template}#{partial}", context, status=status)
    # The header says whether a live owner is behind what the page shows.
    context.setdefault("owner", read_model.owner_status())
    return render(request, template, context, status=status)
