"""Nothing answers data or acts without credentials: every route of the URL conf and
every websocket route, asked by an anonymous caller with every method, is refused.

The routes come from the URL conf itself (`routes.py`), so a new route is walked
without being listed; only `routes.PUBLIC` (login, health probes) is left out.
CSRF checks are off in the test client: only the login can stop these calls.
"""
import pytest
from channels.testing import WebsocketCommunicator
from django.contrib.auth.decorators import login_not_required
from django.http import JsonResponse
from django.test import Client, override_settings
from django.urls import path

from tests.security.routes import (
    fill,
    http_routes,
    is_public,
    private_http_routes,
    websocket_routes,
)

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(120)]

METHODS = ["GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE"]


def refused(response) -> bool:
    """A refusal tells nothing and does nothing: the login page, 401 or 403. Not a 405: its
    Allow header would tell a caller without credentials which methods a route takes."""
    if response.status_code == 302:
        return response["Location"].startswith("/accounts/login/")
    return response.status_code in (401, 403)


def anonymous_answers(client: Client, route: str) -> list[str]:
    """What an anonymous caller got that was not a refusal, one line per method."""
    url = fill(route)
    wrong = []
    for method in METHODS:
        response = client.generic(method, url, b"{}", content_type="application/json")
        if not refused(response):
            wrong.append(f"{method} {url}: {response.status_code}")
    return wrong


@pytest.mark.parametrize("route", private_http_routes())
def test_an_anonymous_caller_is_refused_everywhere(client, route):
    assert anonymous_answers(client, route) == []


def test_the_walk_covers_the_pages_the_api_and_its_schema():
    routes = http_routes()
    for expected in ("", "pods/<str:uid>/<str:action>/", "api/v1/pods/assume",
                     "api/v1/openapi.json", "api/v1/docs", "statuses/"):
        assert any(route == expected or route.startswith(expected.split("<")[0])
                   for route in routes), expected
    assert "accounts/login/" in routes and "accounts/login/" not in private_http_routes()
    assert is_public("healthz") and is_public("readyz/") and not is_public("pods/")


def test_login_itself_answers_anonymously(client):
    assert client.get("/accounts/login/").status_code == 200


# A route someone forgot to protect: the walk must catch it.
urlpatterns = [path("leaky/", login_not_required(lambda request: JsonResponse({"pods": 1})))]


@override_settings(ROOT_URLCONF=__name__)
def test_the_walk_catches_a_route_open_to_anyone(client):
    assert "leaky/" in private_http_routes()
    assert "GET /leaky/: 200" in anonymous_answers(client, "leaky/")


# --- websockets ------------------------------------------------------------------------------
SAME_SITE = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")]


async def handshake(route: str, headers) -> tuple[bool, int | None]:
    from dashboard.asgi import application
    socket = WebsocketCommunicator(application, fill(route), headers=headers)
    connected, code = await socket.connect(timeout=5)
    if connected:
        await socket.disconnect()
    return connected, code


@pytest.mark.asyncio
@pytest.mark.parametrize("route", websocket_routes())
async def test_an_anonymous_socket_is_refused(redis_url, route):
    assert await handshake(route, SAME_SITE) == (False, 4401)


@pytest.mark.asyncio
@pytest.mark.parametrize("route", websocket_routes())
async def test_a_forged_session_cookie_is_refused(redis_url, route):
    forged = SAME_SITE + [(b"cookie", b"sessionid=0123456789abcdefghijklmnopqrstuv")]
    assert await handshake(route, forged) == (False, 4401)


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)   # the consumer reads the session in another thread
async def test_a_logged_in_socket_is_accepted(redis_url, ws_headers):
    """The refusals above are about credentials: the same socket with a session connects."""
    assert (await handshake("ws/overview/", ws_headers))[0]
