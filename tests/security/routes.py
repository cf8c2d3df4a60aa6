"""Every route the web serves, as concrete URLs: the URL conf (pages and the REST API)
and the websocket routes, each parameter filled with a sample value.

The walk and the hostile sweep take their routes from here, so a route added to
the URL conf is walked and swept without anyone listing it.
"""
import re

from django.urls import URLPattern, URLResolver, get_resolver
from django.urls.resolvers import RoutePattern

PARAMETER = re.compile(r"<(?:\w+:)?(\w+)>")

# What answers without credentials, by design: logging in, and the probes that the
# orchestrator calls (they tell whether the process is alive, not what it holds). Routes
# as written in the URL conf, without their slashes.
PUBLIC = {"accounts/login", "healthz", "readyz", "metrics"}


def _walk(patterns, prefix=""):
    for entry in patterns:
        if not isinstance(entry.pattern, RoutePattern):
            # A regex route cannot be filled in by this walk: it must not slip past it.
            raise AssertionError(f"{prefix}{entry.pattern}: only path() routes can be walked")
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            yield from _walk(entry.url_patterns, route)
        elif isinstance(entry, URLPattern):
            yield route


def fill(route: str, value: str = "sample") -> str:
    """The route as a URL path, every parameter set to `value`."""
    return "/" + PARAMETER.sub(value, route)


def http_routes() -> list[str]:
    """Every route of the URL conf (unfilled, as written), the public ones included."""
    return list(_walk(get_resolver().url_patterns))


def is_public(route: str) -> bool:
    return route.strip("/") in PUBLIC


def private_http_routes() -> list[str]:
    return [route for route in http_routes() if not is_public(route)]


def websocket_routes() -> list[str]:
    from dashboard.asgi import websocket_routes as routes
    return [str(route.pattern) for route in routes]
