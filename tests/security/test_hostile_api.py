"""The hostile sweep over the REST API: every operation of the served schema, with hostile
text in every path and query parameter, unknown and repeated parameters, and bodies that
are malformed, deeply nested, 50 MB, of the wrong types or with unknown fields, sent with
an operator's token to a real cache owner.

No answer may be a 500 (502/503/504 name a missing process, with their JSON message), every
error is the API's JSON, and nothing changes: the read model, the owner's cache and the
tokens are as before, and the audit holds refusals only.
"""
import time
from urllib.parse import quote, urlencode

import pytest
from django.test import Client

from dashboard.models import AuditAction
from dashboard.web.api import api
from tests.dashboard.owner.extender.statusworld import scheduled  # noqa: F401  (the fixture: a real owner)
from tests.security.hostile import STRINGS, bodies, field_bodies, unchanged_state

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

BUDGET = 240          # seconds the whole sweep may take
HUGE = b"x" * (50 * 1024 * 1024)


def operations():
    """(method, path template, path params, query params, body fields) of every operation."""
    schema = api.get_openapi_schema()
    components = schema["components"]["schemas"]
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            params = operation.get("parameters", [])
            body = (operation.get("requestBody", {}).get("content", {})
                    .get("application/json", {}).get("schema", {}))
            if "$ref" in body:
                body = components[body["$ref"].rsplit("/", 1)[1]]
            yield (method.upper(), path, [p["name"] for p in params if p["in"] == "path"],
                   [p["name"] for p in params if p["in"] == "query"],
                   list(body.get("properties", {})) if body else None)


def url_of(path: str, values: dict, query=None) -> str:
    for name, value in values.items():
        path = path.replace("{" + name + "}", quote(str(value), safe=""))
    return path + (f"?{query}" if query else "")


def requests_of(method, path, path_params, query_params, fields):
    """(what, url, body) of every hostile request for one operation."""
    plain = {name: "sweep-nothing" for name in path_params}
    for name in path_params:
        for value in STRINGS:
            yield f"path {name}={value[:20]!r}", url_of(path, dict(plain, **{name: value})), None
    base = url_of(path, plain)
    for name in query_params + ["unknown"]:
        for value in STRINGS:
            yield f"query {name}={value[:20]!r}", f"{base}?{urlencode({name: value})}", None
        yield f"query {name} twice", f"{base}?{name}=1&{name}=2", None
    yield "a thousand and one parameters", base + "?" + "&".join(f"p{i}=1" for i in range(1001)), None
    if fields is not None:
        for what, body in bodies() + field_bodies(fields):
            yield f"body {what}", base, body
        yield "body 50 MB", base, HUGE


def test_no_hostile_request_fails_the_api_or_changes_anything(scheduled, api_token):
    tool = Client(HTTP_AUTHORIZATION=f"Bearer {api_token}")
    before = unchanged_state()
    started = time.monotonic()
    failures, sent, swept = [], 0, set()
    for method, path, path_params, query_params, fields in operations():
        swept.add(f"{method} {path}")
        for what, url, body in requests_of(method, path, path_params, query_params, fields):
            response = tool.generic(method, url, body or b"", content_type="application/json")
            sent += 1
            status = response.status_code
            if status >= 500 and status not in (502, 503, 504):
                failures.append(f"{method} {path} {what}: {status}")
            elif status >= 400 and not (response["Content-Type"].startswith("application/json")
                                        and isinstance(response.json().get("error"), str)):
                failures.append(f"{method} {path} {what}: {status} without the JSON error")
            elif status < 400 and method == "POST":
                failures.append(f"{method} {path} {what}: {status}, accepted")
        assert time.monotonic() - started < BUDGET, f"the sweep took over {BUDGET} s"
    print(f"{sent} hostile requests over {len(swept)} operations in "
          f"{time.monotonic() - started:.1f} s")
    assert failures == [], f"{len(failures)} bad answers, first: {failures[:20]}"
    assert {"POST /api/v1/pods/assume", "GET /api/v1/pods/{uid}",
            "POST /api/v1/pools/{pool}/claims", "GET /api/v1/events"} <= swept
    assert unchanged_state() == before
    assert not AuditAction.objects.filter(ok=True).exists()
