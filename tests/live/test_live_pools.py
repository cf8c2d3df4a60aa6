"""Warm pools as separate processes: a simulated cluster whose claimed pool pods come back
idle, `manage.py pools`, and the web (daphne) answering REST claims over real HTTP."""
import sys

import orjson
import pytest

from tests.live.livestack import Stack, child_env, clear_redis
from tests.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def pools_stack(redis_url, transactional_db, tmp_path):
    clear_redis()
    kubeconfig = tmp_path / "kubeconfig"
    s = Stack(tmp_path, child_env(tmp_path, redis_url, kubeconfig))
    s.cluster(kubeconfig, "--nodes", "3", "--pods", "0", "--zones", "1", "--pools", "web=4",
              "--pool-hold", "0.5", "--pool-stop-delay", "0.2")
    s.start("pools", [sys.executable, "manage.py", "pools"])
    s.web()
    try:
        yield s
    finally:
        s.stop_all()


def test_claims_over_http_cycle_through_a_pool_that_turns_idle_again(pools_stack, api_token):
    s = pools_stack
    auth = {"Authorization": f"Bearer {api_token}", "Content-Type": "application/json"}

    def status():
        response = s.http.request("GET", f"{s.web_url}/api/v1/pools/web", headers=auth)
        return response.status == 200 and orjson.loads(response.data)
    wait_for(lambda: (status() or {}).get("idle_ready") == 4, 60, "the pool's four idle pods")
    claimed = []
    for _ in range(10):                     # more claims than pods: later ones wait for idle
        response = s.http.request("POST", f"{s.web_url}/api/v1/pools/web/claims", headers=auth,
                                  body=orjson.dumps({"labels": {"test": "live"}, "timeout": 20}))
        assert response.status == 200, response.data
        claimed.append(orjson.loads(response.data)["pod"]["name"])
    assert set(claimed) <= {f"web-000{i}" for i in range(4)} and len(set(claimed)) == 4
    assert claimed[:4] == ["web-0000", "web-0001", "web-0002", "web-0003"]   # oldest idle first
    wait_for(lambda: status()["metrics"]["outcomes"]["success"] == 10, 10,
             "the ten claims in the published metrics")
    s.stop("pools")                         # SIGTERM: the process drains and says so
    response = s.http.request("POST", f"{s.web_url}/api/v1/pools/web/claims", headers=auth,
                              body=b'{"timeout": 1}')
    assert response.status == 503 and b"manage.py pools" in response.data
