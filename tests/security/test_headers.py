"""Secrets and headers: no SECRET_KEY anyone could know, cookies kept from scripts (and off
plain HTTP in production), and a Content-Security-Policy that runs our own scripts only,
which the templates keep to (no inline script, no on*= handlers)."""
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from dashboard.embedded_secret import embedded_secret_key
from tests.dashboard.test_settings_env import load_settings  # noqa: F401  (the fixture)

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"


def policy_of(response) -> dict[str, list[str]]:
    header = response["Content-Security-Policy"]
    return {part.split()[0]: part.split()[1:] for part in header.split(";") if part.strip()}


# --- SECRET_KEY -------------------------------------------------------------------------------
def test_the_embedded_default_makes_its_own_random_key_once(load_settings, tmp_path):
    first = load_settings(SCHEDVIEW_VAR_DIR=str(tmp_path))["SECRET_KEY"]
    assert len(first) >= 50 and first == (tmp_path / "secret-key").read_text()
    assert (tmp_path / "secret-key").stat().st_mode & 0o777 == 0o600
    assert load_settings(SCHEDVIEW_VAR_DIR=str(tmp_path))["SECRET_KEY"] == first
    other = tmp_path / "other"
    assert load_settings(SCHEDVIEW_VAR_DIR=str(other))["SECRET_KEY"] != first


def test_processes_starting_together_agree_on_the_key(tmp_path):
    path = tmp_path / "secret-key"
    with ThreadPoolExecutor(8) as pool:
        keys = set(pool.map(lambda _: embedded_secret_key(path), range(32)))
    assert len(keys) == 1 and keys == {path.read_text()}
    assert [p.name for p in tmp_path.iterdir()] == ["secret-key"]   # no temp file left


def test_no_key_is_written_in_the_source():
    settings_source = (Path(__file__).resolve().parents[2] / "dashboard" / "settings.py").read_text()
    assert not re.search(r"SECRET_KEY\s*=\s*['\"]", settings_source)


def test_production_still_requires_a_key(load_settings, tmp_path):
    from django.core.exceptions import ImproperlyConfigured
    with pytest.raises(ImproperlyConfigured, match="SECRET_KEY"):
        load_settings(DEBUG="0", SCHEDVIEW_VAR_DIR=str(tmp_path))
    assert not (tmp_path / "secret-key").exists()


# --- cookies ----------------------------------------------------------------------------------
def test_production_cookies_are_secure_and_httponly(load_settings):
    s = load_settings(DEBUG="0", SECRET_KEY="k" * 50)
    assert s["SESSION_COOKIE_SECURE"] and s["CSRF_COOKIE_SECURE"]
    assert s["SESSION_COOKIE_HTTPONLY"] and s["CSRF_COOKIE_HTTPONLY"]


@pytest.mark.django_db
def test_the_login_sets_httponly_cookies(client, viewer):
    client.get("/accounts/login/")
    assert client.cookies["csrftoken"]["httponly"]
    client.post("/accounts/login/", {"username": "viewer", "password": "viewer-password"})
    assert client.cookies["sessionid"]["httponly"]


# --- Content-Security-Policy --------------------------------------------------------------------
@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/accounts/login/", "/", "/pods/", "/events/"])
def test_pages_allow_only_our_own_scripts(viewer_client, redis_url, path):
    response = viewer_client.get(path)
    policy = policy_of(response)
    assert policy["script-src"] == ["'self'"]
    assert policy["default-src"] == ["'self'"] and policy["object-src"] == ["'none'"]
    assert policy["style-src"] == ["'self'"] and policy["frame-ancestors"] == ["'none'"]
    html = response.content.decode()
    for script in re.findall(r"<script\b[^>]*>", html):
        assert 'src="/static/' in script, script


@pytest.mark.django_db
def test_the_api_answers_carry_the_policy_too(client):
    assert policy_of(client.get("/api/v1/me"))["script-src"] == ["'self'"]


INLINE_SCRIPT = re.compile(r"<script\b(?![^>]*\bsrc=)(?![^>]*type=\"application/json\")[^>]*>")
HANDLER = re.compile(r"\s(?:on[a-z]+|hx-on[:\-\w]*)\s*=", re.IGNORECASE)


@pytest.mark.parametrize("template", sorted(TEMPLATES.rglob("*.html")),
                         ids=lambda path: str(path.relative_to(TEMPLATES)))
def test_templates_hold_no_inline_script_or_handler(template):
    source = re.sub(r"\{#.*?#\}", "", template.read_text())   # template comments
    assert not INLINE_SCRIPT.search(source)
    assert not HANDLER.search(source)
    assert not re.search(r"<style\b", source)


def test_the_template_check_would_see_them():
    assert INLINE_SCRIPT.search("<p></p><script>alert(1)</script>")
    assert not INLINE_SCRIPT.search('<script src="/static/x.js" data-now="1"></script>')
    assert HANDLER.search('<img src=x onerror="alert(1)">')
    assert HANDLER.search('<button hx-on:click="go()">')
