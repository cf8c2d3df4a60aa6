"""The hostile sweep over the pages and websockets: every page route with hostile text in
every path segment and in every parameter any page's forms and links use (htmx requests
too), every form posted with hostile fields and bodies (50 MB included), every websocket
route with hostile paths and queries and hostile frames; against a real cache owner.

No page answers 500, hostile markup never comes back unescaped, and nothing changes.
"""
import re
from urllib.parse import parse_qsl, quote, urlencode

import pytest
from channels.testing import WebsocketCommunicator
from django.test import Client

from dashboard.models import AuditAction
from tests.dashboard.owner.extender.statusworld import scheduled  # noqa: F401  (the fixture: a real owner)
from tests.security.hostile import MARKUP, STRINGS, VALUES, bodies, unchanged_state
from tests.security.routes import PARAMETER, private_http_routes, websocket_routes

# One test a route, so the sweep spreads over the suite's workers; a page that hangs on
# hostile input fails its test at the timeout.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

HUGE = b"x" * (50 * 1024 * 1024)
# Routes' parameters filled with things that exist, so the pages show their forms and links.
EXISTING = {"uid": "uid-placed", "name": "n1", "action": "forget", "namespace": "team"}
LOGIN = {"accounts/login/", "accounts/logout/"}   # swept on their own: they change the session


def pages():
    return [route for route in private_http_routes()
            if not route.startswith("api/") and route not in LOGIN]


def existing(route: str) -> str:
    return "/" + PARAMETER.sub(lambda m: EXISTING[m.group(1)], route)


def hostile_paths(route: str):
    names = PARAMETER.findall(route)
    for name in names:
        for value in STRINGS:
            yield "/" + PARAMETER.sub(
                lambda m: quote(value, safe="") if m.group(1) == name else EXISTING[m.group(1)],
                route)


# Read by pages without a form or link of theirs naming them (or not by default).
READ_UNLINKED = {"page", "per_page", "done", "unknown"}


def parameters_of(client, route: str) -> set[str]:
    """The parameters a page's forms, links and socket use, and READ_UNLINKED."""
    html = client.get(existing(route)).content.decode()
    names = set(READ_UNLINKED)
    names |= set(re.findall(r'<(?:input|select|textarea|button)\b[^>]*\sname="([\w-]+)"', html))
    for query in re.findall(r'(?:href|ws-connect|hx-get)="[^"?]*\?([^"]*)"', html):
        names |= {name for name, _ in parse_qsl(query.replace("&amp;", "&"))}
    return names - {"csrfmiddlewaretoken"}


def check(failures, what, response):
    if response.status_code >= 500:
        failures.append(f"{what}: {response.status_code}")
        return
    body = response.content.decode(errors="replace")
    for markup in MARKUP:
        if markup in body:
            failures.append(f"{what}: {markup!r} unescaped")


def test_the_sweep_finds_the_pages_parameters(scheduled, operator):
    person = Client()
    person.force_login(operator)
    assert {"state", "namespace", "node", "q", "sort"} <= parameters_of(person, "pods/")
    assert {"kind", "cause"} <= parameters_of(person, "events/")
    assert {"confirm", "action"} <= parameters_of(person, "pods/<str:uid>/<str:action>/")


@pytest.mark.parametrize("route", pages(), ids=lambda route: route or "(overview)")
def test_no_hostile_page_request_fails_or_changes_anything(route, scheduled, operator):
    person = Client()
    person.force_login(operator)
    parameters = parameters_of(person, route)
    before = unchanged_state()
    failures = []
    for url in hostile_paths(route):
        check(failures, f"GET {url[:80]}", person.get(url))
    base = existing(route)
    for name in sorted(parameters):
        for value in STRINGS:
            query = urlencode({name: value})
            check(failures, f"GET {base}?{query[:60]}", person.get(f"{base}?{query}"))
            check(failures, f"htmx GET {base}?{query[:60]}",
                  person.get(f"{base}?{query}", HTTP_HX_REQUEST="true"))
    for name in sorted(parameters):
        for value in STRINGS + [str(v) for v in VALUES]:
            check(failures, f"POST {base} {name}={value[:20]!r}", person.post(base, {name: value}))
    for what, body in bodies():
        for content_type in ("application/x-www-form-urlencoded", "application/json",
                             "multipart/form-data; boundary=x"):
            check(failures, f"POST {base} {what} as {content_type}",
                  person.generic("POST", base, body, content_type=content_type))
    check(failures, f"POST {base} 50 MB", person.generic("POST", base, HUGE,
                                                         content_type="text/plain"))
    assert failures == [], f"{len(failures)} bad answers, first: {failures[:20]}"
    assert unchanged_state() == before
    assert not AuditAction.objects.filter(ok=True).exists()


def test_hostile_logins_fail_cleanly_and_log_no_one_in(scheduled, operator):
    failures = []
    for field in ("username", "password", "next"):
        for value in STRINGS:
            visitor = Client()
            form = {"username": "operator", "password": "wrong", "next": "/"}
            form[field] = value
            check(failures, f"login {field}={value[:20]!r}", visitor.post("/accounts/login/", form))
            check(failures, f"login page next={value[:20]!r}",
                  visitor.get("/accounts/login/", {"next": value}))
            assert "_auth_user_id" not in visitor.session
    assert failures == []
    for value in STRINGS:       # logging out with a hostile next never leaves the site
        person = Client()
        person.force_login(operator)
        response = person.post(f"/accounts/logout/?{urlencode({'next': value})}")
        assert response.status_code == 302 and not re.match(r"^(\w+:)?//", response["Location"])


# --- websockets ------------------------------------------------------------------------------
# (Not empty: the test client cannot send an empty frame.)
FRAMES = [frame for frame in STRINGS + [body.decode(errors="replace") for _, body in bodies()]
          + ["x" * 1_000_000] if frame]


async def hostile_socket(path, headers, failures, frames=()):
    from dashboard.asgi import application
    socket = WebsocketCommunicator(application, path, headers=headers)
    try:
        connected, code = await socket.connect(timeout=10)
        if not connected and code not in (4400, 4401, 4404):
            failures.append(f"{path[:80]}: closed with {code}")
        if connected:
            for frame in frames:
                await socket.send_to(text_data=frame)
            await socket.send_to(bytes_data=b"\x00\xff" * 1000)
            await socket.receive_nothing(timeout=0.05)   # let the consumer take them in
        await socket.disconnect()
    except Exception as error:   # the consumer failed: the test client re-raises it
        failures.append(f"{path[:80]}: {error!r}")


def page_of(socket_route: str) -> str | None:
    """The page whose query a socket route reads (None: the catch-all, which reads none)."""
    if not socket_route.startswith("ws/"):
        return None
    page = socket_route.removeprefix("ws/")
    return "" if page == "overview/" else page


@pytest.fixture
def socket_parameters(scheduled, viewer_client):
    """socket route -> the parameters its page reads."""
    return {route: parameters_of(viewer_client, page) if page is not None else {"unknown"}
            for route in websocket_routes() for page in [page_of(route)]}


# One test for every socket route, unlike the pages: each async test closes its event loop,
# and closing one while the live hub's listener waited on Redis once hung for 300 s.
@pytest.mark.asyncio
@pytest.mark.timeout(600)      # about 150 s alone
async def test_no_hostile_socket_fails(scheduled, ws_headers, socket_parameters):
    failures = []
    for route, names in socket_parameters.items():
        for url in hostile_paths(route):
            await hostile_socket(url, ws_headers, failures)
        base = existing(route)
        for name in sorted(names):
            for value in STRINGS:
                await hostile_socket(f"{base}?{urlencode({name: value})}", ws_headers, failures)
        await hostile_socket(base, ws_headers, failures, FRAMES)
    assert failures == [], f"{len(failures)} failed sockets, first: {failures[:20]}"
    await hostile_socket(existing("ws/overview/"), ws_headers, failures)   # still serving
    assert failures == []
