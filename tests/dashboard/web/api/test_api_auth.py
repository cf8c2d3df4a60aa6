"""Who may call the API: a bearer token or a logged-in session to look (401 otherwise),
the act_on_pods permission to act (403), and a session's changes only with its CSRF token.
Every refusal is JSON and changes nothing."""
import pytest
from django.test import Client

from dashboard.models import ApiToken, AuditAction
from tests.dashboard.web.api.apihelpers import error_of, pod_record

pytestmark = pytest.mark.django_db

READS = ["/api/v1/pods", "/api/v1/pods/uid-web", "/api/v1/nodes", "/api/v1/nodes/node-a",
         "/api/v1/zones", "/api/v1/snapshot", "/api/v1/comparer", "/api/v1/events"]
ACTIONS = ["/api/v1/pods/uid-web/forget", "/api/v1/pods/uid-web/expire",
           "/api/v1/pods/assume"]


@pytest.fixture
def web():
    return pod_record("web", state="Assumed")


@pytest.mark.parametrize("path", READS + ACTIONS)
def test_no_credentials_is_401(client, web, path):
    call = client.get if path in READS else client.post
    assert "Bearer" in error_of(call(path), 401)


@pytest.mark.parametrize("header", ["Bearer sv_not-a-token", "Bearer ", "Token abc", "Basic eDp5"])
def test_a_bad_token_is_401(web, header):
    assert error_of(Client(HTTP_AUTHORIZATION=header).get("/api/v1/pods"), 401)


def test_a_token_of_an_inactive_user_is_401(api, operator):
    operator.is_active = False
    operator.save()
    error_of(api.get("/api/v1/pods"), 401)


def test_a_token_works_and_is_marked_used(api, web):
    assert api.get("/api/v1/pods").json()["count"] == 1
    assert ApiToken.objects.get().last_used is not None


def test_a_logged_in_session_reads_too(viewer_client, web):
    assert viewer_client.get("/api/v1/pods/uid-web").json()["state"] == "Assumed"


@pytest.mark.parametrize("path", ACTIONS)
def test_acting_without_the_permission_is_403_by_token_or_session(viewer_api, viewer_client,
                                                                  web, path):
    body = {"namespace": "team", "name": "web", "node": "node-a"}
    for caller in (viewer_api, viewer_client):
        response = caller.post(path, body, content_type="application/json")
        assert "act_on_pods" in error_of(response, 403)
    assert not AuditAction.objects.exists()


def csrf_session(user):
    """A browser logged in as `user` that Django checks for CSRF, and its CSRF token."""
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    browser.get("/")   # a page with a form sets the CSRF cookie
    return browser, browser.cookies["csrftoken"].value


def test_a_session_must_send_its_csrf_token_to_act(operator, web):
    browser, token = csrf_session(operator)
    assert "CSRF" in error_of(browser.post("/api/v1/pods/uid-nope/forget"), 403)
    # With the token the request passes authentication, and meets the 404 of a pod that
    # is not there (no owner needed to tell).
    response = browser.post("/api/v1/pods/uid-nope/forget", HTTP_X_CSRFTOKEN=token)
    assert "uid-nope" in error_of(response, 404)


def test_a_token_needs_no_csrf_token(operator, api_token, web):
    tool = Client(enforce_csrf_checks=True, HTTP_AUTHORIZATION=f"Bearer {api_token}")
    assert "uid-nope" in error_of(tool.post("/api/v1/pods/uid-nope/forget"), 404)


def test_the_schema_and_docs_are_served(api):
    schema = api.get("/api/v1/openapi.json").json()
    assert schema["info"]["version"] == "1"
    assert {"/api/v1/pods", "/api/v1/pods/{uid}", "/api/v1/events", "/api/v1/pods/assume",
            "/api/v1/zones", "/api/v1/snapshot", "/api/v1/comparer"} <= set(schema["paths"])
    pods = schema["paths"]["/api/v1/pods"]["get"]["responses"]
    assert pods["200"]["content"]["application/json"]["schema"]["$ref"].endswith("PodPageOut")
    assert schema["components"]["schemas"]["PodPageOut"]["examples"]
    assert api.get("/api/v1/docs").status_code == 200


@pytest.mark.parametrize("header", [None, "Bearer sv_not-a-token"])
@pytest.mark.parametrize("path", ACTIONS)
def test_a_change_without_a_good_token_is_401_not_a_csrf_failure(web, header, path):
    """As a tool calls: no session, so no CSRF token either; the schema says 401."""
    headers = {"HTTP_AUTHORIZATION": header} if header else {}
    tool = Client(enforce_csrf_checks=True, **headers)
    assert "Bearer" in error_of(tool.post(path, {}, content_type="application/json"), 401)
    assert not AuditAction.objects.exists()


@pytest.mark.parametrize("debug", [False, True])
def test_unknown_paths_and_methods_under_the_api_answer_json(api, client, web, settings, debug):
    settings.DEBUG = debug       # never Django's debug page listing every URL
    for path in ("/api/v1/no-such-thing", "/api/v1/pods/a/b", "/api/v2/pods"):
        response = api.get(path)
        assert f"no API endpoint {path}" in error_of(response, 404)
        assert error_of(api.options(path), 404)          # an unknown path has no methods
        # to a caller without credentials, the API names nothing it has or has not
        assert "authentication required" in error_of(client.get(path), 401)
        assert "authentication required" in error_of(client.options(path), 401)
    response = api.get("/api/v1/pods/uid-web/forget")
    assert "GET is not allowed" in error_of(response, 405)
    assert response["Allow"] == "POST"
    response = api.delete("/api/v1/pods")
    assert error_of(response, 405) and response["Allow"] == "GET"


@pytest.mark.parametrize("header", [None, "Bearer sv_not-a-token"])
@pytest.mark.parametrize("method, path", [("DELETE", "/api/v1/pods"),
                                          ("GET", "/api/v1/pods/uid-web/forget"),
                                          ("PUT", "/api/v1/health")])
def test_a_method_a_path_does_not_take_is_401_without_credentials(web, header, method, path):
    """Authentication first: the 405 and its Allow header are for callers the API answers."""
    headers = {"HTTP_AUTHORIZATION": header} if header else {}
    response = Client(**headers).generic(method, path)
    assert "authentication required" in error_of(response, 401)
    assert not response.has_header("Allow")


@pytest.mark.parametrize("header, door", [
    (None, "api session"),
    ("Bearer sv_not-a-token", "api session"),   # a session carrying a token that failed
    ("good", "api token"),
])
def test_the_audit_names_the_door_that_authenticated_the_call(rf, operator, api_token,
                                                              header, door):
    from dashboard.web.api.auth import bearer_token, via
    extra = {} if header is None else {
        "HTTP_AUTHORIZATION": f"Bearer {api_token}" if header == "good" else header}
    request = rf.post("/api/v1/pods/uid-web/forget", **extra)
    request.user = operator
    bearer_token(request)          # ninja tries the token first, then the session
    assert via(request) == door
