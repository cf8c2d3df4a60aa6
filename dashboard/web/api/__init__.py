"""The versioned REST API for tools: `/api/v1/`, its OpenAPI schema and docs.

django-ninja builds the schema from the operations' type hints, so the docs
cannot drift from the code. Every operation needs a token or a session
(`auth.py`); every error has one JSON shape (`errors.py`), a path or method no
operation serves too (`unknown.py`).
"""
from ninja import NinjaAPI

from dashboard.web.api import auth, errors

api = NinjaAPI(
    title="schedview",
    version="1",
    description="The scheduler cache: pods and their state machine, nodes, zones, snapshots, "
                "events, the comparer, the cache's dump, the pending queue and why pods "
                "wait, and actions on assumed pods.",
    auth=auth.token_or_session,
    docs_decorator=auth.documents_for_callers,
    urls_namespace="api-v1",
)
errors.install(api)

# --- routers: one line each ---------------------------------------------------------------
api.add_router("/me", "dashboard.web.api.me.router")
api.add_router("/pods", "dashboard.web.api.pods.router")
api.add_router("/pending", "dashboard.web.api.pending.router")
api.add_router("/nodes", "dashboard.web.api.nodes.router")
api.add_router("/", "dashboard.web.api.cluster.router")   # /zones, /snapshot, /comparer
api.add_router("/", "dashboard.web.api.past.router")      # /counts, /diff
api.add_router("/events", "dashboard.web.api.events.router")
api.add_router("/audit", "dashboard.web.api.audit.router")
api.add_router("/pools", "dashboard.web.pools.api.router")
api.add_router("/statuses", "dashboard.web.api.statuses.router")
api.add_router("/health", "dashboard.web.api.health.router")
api.add_router("/cache", "dashboard.web.api.cache.router")


def urls():
    """The API's URL patterns, exempt from the pages' login redirect: it answers 401 itself.
    Its root, no operation (django-ninja's 404 naming the docs), keeps the redirect."""
    patterns, app_name, namespace = api.urls
    for pattern in patterns:
        if pattern.name != "api-root":
            pattern.callback.login_required = False
    return patterns, app_name, namespace
