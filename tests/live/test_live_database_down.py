"""The web with its database (a PostgreSQL of the test's own, pooled as in production)
stopped: pages and the API answer 503 "database unreachable" within 3 s, and serve again
once it is back."""
import orjson
import pytest

from tests.live.private_services import PrivatePostgres
from tests.live.private_web import log_in, timed_get, web_on
from tests.waiting import wait_for

pytestmark = pytest.mark.timeout(240)

PROMPT = 3.0     # seconds a request may take to say the database is down


@pytest.fixture
def web(redis_url, tmp_path):
    database = PrivatePostgres()
    try:
        database.init()
        with web_on(database.url, redis_url, tmp_path, db_pool=4) as (stack, token):
            yield stack, database, token
    finally:
        database.remove()


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
