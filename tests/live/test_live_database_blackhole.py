"""The web with its PostgreSQL (a private one, pooled as in production) behind a fault
proxy that blackholes it for 20 s: connections stay open and nothing answers (issue 22: a
REST read hung 29.7 s and health said "database ok"). Every REST read answers 503 naming
the database within its bound, /api/v1/health answers its document within its bound with
the database check not ok, and both serve again once the database answers. The figures
(slowest answer during the fault, time to serve again) are printed (-s) and recorded in
bench/README.md."""
import subprocess
import sys
import time

import orjson
import pytest

from tests.faultproxy import BLACKHOLE, PASS, FaultProxy
from tests.live.livestack import ROOT, Stack, child_env
from tests.live.private_services import PrivatePostgres
from tests.live.test_live_database_down import log_in, timed_get
from tests.waiting import wait_for

pytestmark = pytest.mark.timeout(300)

STATEMENT_TIMEOUT = 2.0   # SCHEDVIEW_DB_STATEMENT_TIMEOUT of the web under test
# Seconds a request may take during the fault: the statement timeout, the client's grace
# (db_deadline.GRACE) or a pool's wait and a connection attempt (2 s each), and a margin
# for a loaded machine.
BOUND = STATEMENT_TIMEOUT + 1.0 + 3.0
FAULT = 20.0              # seconds the database is blackholed


@pytest.fixture
def web(redis_url, tmp_path):
    database = PrivatePostgres()
    try:
        database.init()
        with FaultProxy(("127.0.0.1", database.port)) as proxy:
            url = f"postgres://postgres@127.0.0.1:{proxy.port}/postgres"
            env = dict(child_env(tmp_path, redis_url, tmp_path / "no-kubeconfig", db_pool=4,
                                 db_statement_timeout=STATEMENT_TIMEOUT),
                       DATABASE_URL=url, DJANGO_SUPERUSER_PASSWORD="pw-for-the-test")
            stack = Stack(tmp_path, env)

            def manage(*argv):
                return subprocess.run([sys.executable, "manage.py", *argv], cwd=ROOT, env=env,
                                      check=True, capture_output=True, text=True,
                                      timeout=120).stdout
            manage("migrate", "--no-input")
            manage("createsuperuser", "--no-input", "--username", "viewer",
                   "--email", "v@x.test")
            token = manage("apitoken", "viewer").strip().splitlines()[-1]
            stack.web()
            try:
                yield stack, proxy, token
            finally:
                stack.stop_all()
    finally:
        database.remove()


def test_a_database_that_answers_nothing_is_a_bounded_503_and_health_says_so(web):
    stack, proxy, token = web
    api = {"Authorization": f"Bearer {token}"}
    page = log_in(stack)
    assert timed_get(stack, "/api/v1/pods", api)[0].status == 200
    assert timed_get(stack, "/api/v1/health", api)[0].status == 200

    proxy.set_mode(BLACKHOLE)
    began, reads, healths = time.monotonic(), [], []
    while time.monotonic() - began < FAULT:
        response, took = timed_get(stack, "/api/v1/pods", api)
        assert response.status == 503 and took < BOUND, (response.status, took,
                                                         response.data[:300])
        assert orjson.loads(response.data)["error"].startswith("database "), response.data
        assert response.headers["Retry-After"]
        reads.append(took)
        response, took = timed_get(stack, "/api/v1/health", api)
        assert response.status in (200, 503) and took < BOUND, (response.status, took)
        document = orjson.loads(response.data)
        database = next(c for c in document["checks"] if c["name"] == "database")
        assert database["level"] in ("warn", "fail"), database
        assert document["level"] in ("warn", "fail")
        healths.append(took)
        response, took = timed_get(stack, "/", page)
        assert response.status == 503 and took < BOUND, (response.status, took)
        assert "database " in response.data.decode()

    proxy.set_mode(PASS)
    back = time.monotonic()
    wait_for(lambda: timed_get(stack, "/api/v1/pods", api)[0].status == 200, 30,
             "the API to serve again")
    recovered = time.monotonic() - back
    wait_for(lambda: timed_get(stack, "/", page)[0].status == 200, 30,
             "the pages to serve again")
    print(f"\nblackholed database, {FAULT:g} s: {len(reads)} REST reads answered 503 "
          f"(slowest {max(reads):.2f} s), {len(healths)} health documents (slowest "
          f"{max(healths):.2f} s); the API served again {recovered:.2f} s after it answered")
