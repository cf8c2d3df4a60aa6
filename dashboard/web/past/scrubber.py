"""What the header's time travel controls need (base.html, static/scrubber.js): the page
they send `?at=` to, and the moments the scrubber spans.

Why a context processor: every page's header carries them; the span is read only when a
template prints it (a logged-in user's full page), not for fragments or the API."""
from django.urls import reverse
from django.utils.functional import SimpleLazyObject

from dashboard.readmodel.moment import kept_range

# the pages that show a moment (`when_at`): the controls stay on them; elsewhere, the overview
MOMENT_PAGES = {"overview", "nodes", "node-detail", "heatmap", "zones", "pods", "pod-detail",
                "snapshot"}


def moment_controls(request):
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    match = getattr(request, "resolver_match", None)
    on_moment_page = match is not None and match.url_name in MOMENT_PAGES
    return {"moment_action": request.path if on_moment_page else reverse("overview"),
            "kept_moments": SimpleLazyObject(kept_range)}
