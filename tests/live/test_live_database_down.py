"""The web with its database (a PostgreSQL of the test's own, pooled as in production)
stopped: pages and the API answer 503 "database unreachable" within 3 s, and serve again
once it is back."""
import re
import subprocess
import sys
import time

import orjson
import pytest

from tests.live.livestack import ROOT, Stack, child_env
from tests.live.private_services import PrivatePostgres
from tests.waiting import wait_for

pytestmark = pytest.mark.timeout(240)

PROMPT = 3.0     # seconds a request may take to say the database is down


@pytest.fixture
def web(redis_url, tmp_path):
    database = PrivatePostgres()
    try:
        database.init()
        env = dict(child_env(tmp_path, redis_url, tmp_path / "no-kubeconfig", db_pool=4),
                   DATABASE_URL=database.url, DJANGO_SUPERUSER_PASSWORD="pw-for-the-test")
        stack = Stack(tmp_path, env)

        def manage(*argv):
            return subprocess.run([sys.executable, "manage.py", *argv], cwd=ROOT, env=env,
                                  check=True, capture_output=True, text=True,
                                  timeout=120).stdout
        manage("migrate", "--no-input")
        manage("createsuperuser", "--no-input", "--username", "viewer", "--email", "v@x.test")
        token = manage("apitoken", "viewer").strip().splitlines()[-1]
        stack.web()
        try:
            yield stack, database, token
        finally:
            stack.stop_all()
    finally:
        database.remove()


def log_in(stack) -> dict:
    """A logged-in session's cookie header, through the login form."""
    page = stack.http.request("GET", f"{stack.web_url}/accounts/login/")
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.data.decode())[1]
    cookie = page.headers["Set-Cookie"].split(";", 1)[0]
    response = stack.http.request(
        "POST", f"{stack.web_url}/accounts/login/", redirect=False,
        fields={"csrfmiddlewaretoken": csrf, "username": "viewer",
                "password": "pw-for-the-test"},
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


def test_a_database_that_is_down_is_a_prompt_503_naming_it(web):
    stack, database, token = web
    api = {"Authorization": f"Bearer {token}"}
    page = log_in(stack)
    assert timed_get(stack, "/api/v1/pods", api)[0].status == 200
    assert timed_get(stack, "/", page)[0].status == 200

    database.stop()
    for _ in range(2):          # the first calls meet pooled connections the stop broke
        response, took = timed_get(stack, "/api/v1/pods", api)
        assert response.status == 503 and took < PROMPT, (response.status, took)
        assert orjson.loads(response.data)["error"].startswith("database unreachable: ")
        assert response.headers["Retry-After"]
        response, took = timed_get(stack, "/", page)
        assert response.status == 503 and took < PROMPT, (response.status, took)
        assert "database unreachable: " in response.data.decode()

    database.start()
    wait_for(lambda: timed_get(stack, "/api/v1/pods", api)[0].status == 200, 30,
             "the API to serve again")
    wait_for(lambda: timed_get(stack, "/", page)[0].status == 200, 30,
             "the pages to serve again")
