"""The web alone on a database of a test's own (the database-down and blackhole tests):
migrated, a `viewer` with a password and an API token, and the requests those tests time."""
import re
import subprocess
import sys
import time
from contextlib import contextmanager

from tests.live.livestack import ROOT, Stack, child_env

PASSWORD = "pw-for-the-test"


@contextmanager
def web_on(database_url: str, redis_url: str, tmp_path, **options):
    """(the stack serving the web on `database_url`, the viewer's API token); `options` go
    to child_env (db_pool, db_statement_timeout...)."""
    env = dict(child_env(tmp_path, redis_url, tmp_path / "no-kubeconfig", **options),
               DATABASE_URL=database_url, DJANGO_SUPERUSER_PASSWORD=PASSWORD)
    stack = Stack(tmp_path, env)

    def manage(*argv):
        return subprocess.run([sys.executable, "manage.py", *argv], cwd=ROOT, env=env,
                              check=True, capture_output=True, text=True, timeout=120).stdout
    manage("migrate", "--no-input")
    manage("createsuperuser", "--no-input", "--username", "viewer", "--email", "v@x.test")
    token = manage("apitoken", "viewer").strip().splitlines()[-1]
    stack.web()
    try:
        yield stack, token
    finally:
        stack.stop_all()


def log_in(stack) -> dict:
    """A logged-in session's cookie header, through the login form."""
    page = stack.http.request("GET", f"{stack.web_url}/accounts/login/")
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.data.decode())[1]
    cookie = page.headers["Set-Cookie"].split(";", 1)[0]
    response = stack.http.request(
        "POST", f"{stack.web_url}/accounts/login/", redirect=False,
        fields={"csrfmiddlewaretoken": csrf, "username": "viewer", "password": PASSWORD},
        encode_multipart=False, headers={"Cookie": cookie,
                                         "Referer": f"{stack.web_url}/accounts/login/"})
    assert response.status == 302, response.data[:500]
    session = [c.split(";", 1)[0] for c in response.headers.getlist("Set-Cookie")
               if c.startswith("sessionid=")]
    return {"Cookie": session[0]}


def timed_get(stack, path, headers):
    started = time.monotonic()
    response = stack.http.request("GET", f"{stack.web_url}{path}", headers=headers,
                                  redirect=False, retries=False, timeout=30)
    return response, time.monotonic() - started
