"""The settings the manifests give pass Django's deployment checks, and a production web
answers unknown pages and failures with plain pages of our own."""
import os
import secrets
import subprocess
import sys

import pytest
from django.contrib.auth.decorators import login_not_required
from django.test import override_settings
from django.urls import include, path

from tests.deploy.manifests import DEPLOY, configmap_env, rendered


def manifest_env(overlay: str) -> dict:
    """The environment a pod of `overlay` gets: its ConfigMap, and the Secret's three keys."""
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("SCHEDVIEW_", "SECURE_", "DEBUG", "DATABASE_URL",
                                   "REDIS_URL", "ALLOWED_HOSTS", "CSRF_"))}
    return {**env, **configmap_env(rendered(overlay)),
            "SECRET_KEY": secrets.token_urlsafe(50),
            "DATABASE_URL": "postgres://schedview@postgres.example:5432/schedview",
            "REDIS_URL": "redis://redis.example:6379/0"}


def check_deploy(env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "manage.py", "check", "--deploy",
                           "--fail-level", "WARNING"], cwd=DEPLOY.parent, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("overlay", ("small", "large"))
def test_check_deploy_is_clean_with_the_manifests_settings(overlay):
    result = check_deploy(manifest_env(overlay))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_check_deploy_can_fail():
    env = manifest_env("small") | {"SECURE_HSTS_SECONDS": "0"}
    result = check_deploy(env)
    assert result.returncode != 0 and "security.W004" in result.stderr


@login_not_required
def broken(request):
    raise RuntimeError("a bug")


urlpatterns = [path("broken/", broken), path("", include("dashboard.urls"))]


@pytest.mark.django_db
@override_settings(DEBUG=False, ROOT_URLCONF=__name__, ALLOWED_HOSTS=["testserver"])
def test_unknown_pages_and_failures_get_our_plain_pages(client):
    missing = client.get("/no/such/page/")
    assert missing.status_code == 404
    assert "<h1>Not found</h1>" in missing.content.decode()
    client.raise_request_exception = False
    failed = client.get("/broken/")
    assert failed.status_code == 500
    html = failed.content.decode()
    assert "<h1>Server error</h1>" in html and "a bug" not in html and "Traceback" not in html
