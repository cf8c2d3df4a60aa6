"""The web with its PostgreSQL (a private one, pooled as in production) behind a fault
proxy that blackholes it for 20 s: connections stay open and nothing answers (issue 22: a
REST read hung 29.7 s and health said "database ok"). Every REST read answers 503 naming
the database within its bound, /api/v1/health answers its document within its bound with
the database check not ok, and both serve again once the database answers. The figures
(slowest answer during the fault, time to serve again) are printed (-s) and recorded in
bench/README.md."""
import time

import orjson
import pytest
from django.db import connection
from kubernetes import client, config

from dashboard.clients.owner_client import send
from dashboard.models import ComparerRun
from tests.faultproxy import BLACKHOLE, PASS, FaultProxy
from tests.live.livestack import (
    database_url,
    new_pod,
    owner_status,
    state_of,
    synced_owner,
)
from tests.live.private_services import PrivatePostgres
from tests.live.private_web import log_in, timed_get, web_on
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
            with web_on(url, redis_url, tmp_path, db_pool=4,
                        db_statement_timeout=STATEMENT_TIMEOUT) as (stack, token):
                yield stack, proxy, token
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


def test_the_owner_goes_on_while_its_database_answers_nothing_and_loses_no_row(stack):
    """The owner's database blackholed for 20 s under churn: the extender answers every
    filter promptly (its thread never waits on the writer), the owner keeps applying the
    feed, and once the database answers again every row lands: the comparer's rows part
    (owner/row_drift.py) finds the pages' rows equal to the cluster."""
    if connection.vendor != "postgresql":
        pytest.skip("the owner's database goes through a TCP proxy: DATABASE_URL=postgres://")
    settings_dict = connection.settings_dict
    with FaultProxy((settings_dict["HOST"] or "127.0.0.1",
                     int(settings_dict["PORT"] or 5432))) as proxy:
        proxied = database_url().replace(f":{settings_dict['PORT'] or 5432}/",
                                         f":{proxy.port}/")
        stack.owner("owner-a", DATABASE_URL=proxied, SCHEDVIEW_DB_WRITE_TIMEOUT="3")
        synced_owner(timeout=180)   # a loaded machine starts an owner slowly
        api = client.CoreV1Api(config.new_client_from_config(
            config_file=stack.env["SCHEDVIEW_KUBECONFIG"]))
        url = stack.extender()
        uid = new_pod(api, "probe")
        wait_for(lambda: state_of(uid) == "Pending", 30, "the owner to see it")
        body = orjson.dumps({"Pod": orjson.loads(api.read_namespaced_pod(
            "probe", "default", _preload_content=False).data), "Nodes": None,
            "NodeNames": [n.metadata.name for n in api.list_node().items]})
        stack.control("churn", {"rate": 20})

        proxy.set_mode(BLACKHOLE)
        began, filters = time.monotonic(), []
        applied = owner_status()["applied"]
        while time.monotonic() - began < FAULT:
            started = time.monotonic()
            response = stack.http.request("POST", f"{url}/filter", body=body, timeout=10,
                                          headers={"Content-Type": "application/json"})
            filters.append(time.monotonic() - started)
            assert response.status == 200, response.data[:300]
            assert orjson.loads(response.data)["NodeNames"], response.data[:300]
        assert owner_status()["applied"] > applied, "the owner stopped applying the feed"
        waiting = owner_status()["write_waiting"]

        proxy.set_mode(PASS)
        back = time.monotonic()
        stack.control("churn", {"rate": 0})
        wait_for(lambda: (lambda s: s["read_model_backlog"] == 0 and s["synced"])(
            owner_status()), 60, "every change written")
        written = time.monotonic() - back
        ComparerRun.objects.all().delete()
        send("compare", {}, timeout=5)
        run = wait_for(lambda: ComparerRun.objects.first(), 60, "a comparison")
        assert run.clean, run.report
    print(f"\nowner's database blackholed {FAULT:g} s under churn: {len(filters)} filters "
          f"answered (slowest {max(filters) * 1000:.0f} ms); a write waited {waiting:.1f} s "
          f"when it ended; every change written {written:.1f} s after it answered")
