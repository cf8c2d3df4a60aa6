"""Who may look and who may act: pages need a login, the API a token or a session,
actions the act_on_pods permission; credentials never leak into pages."""
import pytest
from django.core.management import call_command

from dashboard.models import ApiToken

pytestmark = pytest.mark.django_db


def test_a_page_sends_an_anonymous_visitor_to_log_in(client):
    response = client.get("/nodes/")
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/?next=/nodes/"


def test_logging_in_leads_back_to_the_page(client, viewer):
    response = client.post("/accounts/login/?next=/nodes/",
                           {"username": "viewer", "password": "viewer-password", "next": "/nodes/"})
    assert (response.status_code, response["Location"]) == (302, "/nodes/")
    assert client.get("/nodes/").status_code == 200


def test_a_wrong_password_is_refused_with_a_message(client, viewer):
    response = client.post("/accounts/login/", {"username": "viewer", "password": "nope"})
    assert response.status_code == 200
    assert "do not match" in response.content.decode()
    assert client.get("/nodes/").status_code == 302


def test_logging_out_needs_a_post_and_ends_the_session(viewer_client):
    assert viewer_client.get("/accounts/logout/").status_code == 405
    assert viewer_client.post("/accounts/logout/").status_code == 302
    assert viewer_client.get("/").status_code == 302


def test_the_header_names_the_user_and_whether_they_may_act(viewer_client, operator_client):
    assert "viewer (view only)" in viewer_client.get("/").content.decode()
    html = operator_client.get("/").content.decode()
    assert "operator" in html and "(view only)" not in html


def test_the_api_answers_401_in_json_without_credentials(client):
    response = client.get("/api/v1/me")
    assert response.status_code == 401
    assert "Bearer" in response.json()["error"]


def test_the_api_takes_a_bearer_token(client, api_token):
    response = client.get("/api/v1/me", HTTP_AUTHORIZATION=f"Bearer {api_token}")
    assert response.json() == {"username": "operator", "can_act": True}
    assert ApiToken.objects.get().last_used is not None


def test_a_wrong_or_inactive_token_is_401(client, api_token, operator):
    assert client.get("/api/v1/me", HTTP_AUTHORIZATION="Bearer sv_wrong").status_code == 401
    operator.is_active = False
    operator.save()
    assert client.get("/api/v1/me", HTTP_AUTHORIZATION=f"Bearer {api_token}").status_code == 401


def test_the_api_takes_the_browsers_session(viewer_client):
    assert viewer_client.get("/api/v1/me").json() == {"username": "viewer", "can_act": False}


def test_tokens_are_stored_as_digests_only(operator):
    row, token = ApiToken.issue(operator, "ci")
    assert token.startswith("sv_") and token not in (row.digest, row.name)
    assert row.digest == ApiToken.digest_of(token)


def test_the_apitoken_command_prints_a_working_token(client, operator, capsys):
    call_command("apitoken", "operator", "--name", "ci")
    token = capsys.readouterr().out.strip()
    assert client.get("/api/v1/me", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 200


def test_the_apitoken_command_refuses_an_unknown_user():
    from django.core.management.base import CommandError
    with pytest.raises(CommandError, match="no active user named 'ghost'"):
        call_command("apitoken", "ghost")


def test_the_schema_and_docs_are_served(viewer_client):
    schema = viewer_client.get("/api/v1/openapi.json").json()
    assert schema["info"]["title"] == "schedview"
    assert "/api/v1/me" in schema["paths"]
    assert viewer_client.get("/api/v1/docs").status_code == 200


def test_first_login_makes_an_operator_once(tmp_path, django_user_model):
    from dashboard.management.commands.up import first_login
    django_user_model.objects.all().delete()   # a database without users (rolled back after)
    message = first_login(tmp_path)
    password = (tmp_path / "operator-password").read_text().strip()
    assert password in message
    from django.contrib.auth import authenticate
    from django.test import RequestFactory
    user = authenticate(RequestFactory().post("/accounts/login/"), username="operator",
                        password=password)   # django-axes watches logins: it needs the request
    assert user.has_perm("dashboard.act_on_pods")
    assert first_login(tmp_path) == message  # a second start keeps the same account
