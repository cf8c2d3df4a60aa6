"""The cache's dump over REST (GET /api/v1/cache/dump, /cache/dump/pending) and as
`manage.py dumpcache`, against a real cache owner (the `owner` fixture: node-a with the
pod `running`, node-b, the pending pods waiting-0..3 and gpu-job)."""
import io

import orjson
import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from dashboard.management.commands import dumpcache
from dashboard.web.api import cache as cache_api
from dashboard.wire.clients import redis_client
from tests.dashboard.web.api.apihelpers import clear_commands, error_of

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

PENDING = ["uid-gpu-job"] + [f"uid-waiting-{i}" for i in range(4)]


def every_page(api, url, limit):
    pages, after = [], ""
    while after is not None:
        response = api.get(url, {"after": after, "limit": limit})
        assert response.status_code == 200, response.content
        pages.append(response.json())
        after = pages[-1]["next"]
    return pages


def test_the_nodes_are_dumped_a_page_at_a_time(api, owner):
    pages = every_page(api, "/api/v1/cache/dump", 1)
    assert [[node["name"] for node in page["items"]] for page in pages] == [["node-a"],
                                                                             ["node-b"]]
    node_a = pages[0]["items"][0]
    assert [pod["name"] for pod in node_a["pods"]] == ["running"]
    assert node_a["requested"]["milli_cpu"] == 100 and node_a["allocatable"]["milli_cpu"] > 0
    assert node_a["nominated_pods"] == [] and not node_a["deleted"]
    assert pages[0]["counts"] == {"nodes": 2, "pods": 1, "assumed": 0, "pending": 5}
    assert pages[0]["seq"] > 0 and pages[0]["comparer"] is None


def test_the_pending_pods_are_dumped_a_page_at_a_time(api, owner):
    pages = every_page(api, "/api/v1/cache/dump/pending", 2)
    assert [pod["uid"] for page in pages for pod in page["items"]] == PENDING
    assert [len(page["items"]) for page in pages] == [2, 2, 1]
    assert pages[0]["items"][0] == {"uid": "uid-gpu-job", "namespace": "team",
                                    "name": "gpu-job", "priority": 0, "nominated_node": ""}


@pytest.mark.parametrize("query", ["limit=0", f"limit={cache_api.MAX_LIMIT + 1}", "limit=x",
                                   "after=a%00b", "limit=1&limit=2"])
def test_a_bad_query_is_400_and_reaches_no_owner(api, owner, query):
    commands = owner.owner.stats["commands"]
    error_of(api.get(f"/api/v1/cache/dump?{query}"), 400)
    assert owner.owner.stats["commands"] == commands


def test_without_an_owner_it_is_a_503(api, redis_url, monkeypatch):
    monkeypatch.setattr(cache_api, "TIMEOUT", 0.3)
    client = redis_client(settings.REDIS_URL)
    clear_commands(client)
    try:
        assert "manage.py watch" in error_of(api.get("/api/v1/cache/dump"), 503)
        error_of(api.get("/api/v1/cache/dump/pending"), 503)
    finally:
        clear_commands(client)


def test_it_needs_a_caller_and_is_in_the_schema(client, api):
    error_of(client.get("/api/v1/cache/dump"), 401)
    paths = api.get("/api/v1/openapi.json").json()["paths"]
    for path in ("/api/v1/cache/dump", "/api/v1/cache/dump/pending"):
        assert {"200", "400", "401", "502", "503"} == set(paths[path]["get"]["responses"])


def test_dumpcache_writes_the_whole_dump_as_json_lines_page_by_page(owner, tmp_path):
    out = tmp_path / "dump.jsonl"
    commands = owner.owner.stats["commands"]
    call_command("dumpcache", "--out", str(out), "--limit", "1")
    lines = [orjson.loads(line) for line in out.read_text().splitlines()]
    assert [line["kind"] for line in lines] == ["dump", "node", "node"] + ["pending"] * 5
    assert lines[0]["counts"]["pending"] == 5 and lines[0]["comparer"] is None
    assert [line["name"] for line in lines[1:3]] == ["node-a", "node-b"]
    assert [line["uid"] for line in lines[3:]] == PENDING
    assert all(line["seq"] >= lines[0]["seq"] for line in lines[1:])
    # a page a node or pending pod, and the last of each part says it is the last
    assert owner.owner.stats["commands"] - commands == 2 + 5
    assert list(tmp_path.iterdir()) == [out]
    stdout = io.StringIO()
    call_command("dumpcache", stdout=stdout)
    assert [orjson.loads(line)["kind"] for line in stdout.getvalue().splitlines()] == \
        [line["kind"] for line in lines]


def test_dumpcache_without_an_owner_fails_clearly_and_writes_nothing(redis_url, tmp_path,
                                                                     monkeypatch):
    monkeypatch.setattr(dumpcache, "TIMEOUT", 0.3)
    client = redis_client(settings.REDIS_URL)
    clear_commands(client)
    try:
        with pytest.raises(CommandError, match=r"could not dump the cache \(503\)"):
            call_command("dumpcache", "--out", str(tmp_path / "dump.jsonl"))
    finally:
        clear_commands(client)
    assert list(tmp_path.iterdir()) == []


def test_dumpcache_refuses_a_bad_page_size():
    with pytest.raises(CommandError, match=f"a whole number from 1 to {cache_api.MAX_LIMIT}"):
        call_command("dumpcache", "--limit", "0")
