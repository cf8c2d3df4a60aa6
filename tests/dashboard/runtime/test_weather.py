"""The simulated cluster's episodes as the pages announce them: `up`'s announcer reads the
cluster's state into Redis; the pages read it back, and say when a warning still settles."""
import time

import orjson
from django.conf import settings

from dashboard.runtime import weather
from dashboard.wire.clients import redis_client
from dashboard.wire.keys import SIMCLUSTER_WEATHER, SIMCLUSTER_WEATHER_TTL
from simcluster import SimCluster

STATE = {"episodes": ["failing-binds", "lost-events"], "calm": 180.0, "length": 60.0,
         "now": None, "next": {"name": "lost-events", "title": "Lost watch events",
                               "at": 1_000_300.0},
         "last": {"name": "failing-binds", "title": "Failing binds", "ended": 1_000_100.0}}


def test_a_state_reads_as_the_pages_show_it():
    read = weather.parse(STATE, settle=120, now=1_000_150)
    assert read.now is None and read.next.title == "Lost watch events"
    assert read.next.since.timestamp() == 1_000_300 and read.last.until.timestamp() == 1_000_100
    assert read.settling                       # 50 s after it ended, within 120
    assert not weather.parse(STATE, settle=120, now=1_000_250).settling
    assert weather.parse(dict(STATE, episodes=[])) is None     # no episodes: nothing to say


def test_the_announcer_publishes_what_the_cluster_runs(redis_url):
    client = redis_client(settings.REDIS_URL)
    client.delete(SIMCLUSTER_WEATHER)
    with SimCluster(nodes=2, pods=4, kubelet=False) as sim:
        sim.weather.update(episodes=["slow-pool"], first_in=0, length=30)
        sim.weather.step()
        announcer = weather.Announcer(sim.url, client)
        announcer.announce_once()
        read = weather.injected(client)
        assert read.now.name == "slow-pool" and "come back idle after 40 s" in read.now.what
        assert 0 < client.ttl(SIMCLUSTER_WEATHER) <= SIMCLUSTER_WEATHER_TTL
        assert read.now.until.timestamp() - time.time() <= 30
    announcer.announce_once()          # the cluster is gone: nothing new is published
    assert orjson.loads(client.get(SIMCLUSTER_WEATHER))["now"]["name"] == "slow-pool"
    client.delete(SIMCLUSTER_WEATHER)
    assert weather.injected(client) is None


REPLAY = {"source": "demo.jsonl.gz", "events": 1200, "played": 300, "recorded_at": 1_000_000.5,
          "recorded_from": 999_900.0, "recorded_until": 1_000_200.0, "speed": 2.0,
          "reschedule": False, "started_at": 2_000_000.0, "finished_at": None, "missing": 0,
          "skipped": {}}


def test_a_replay_alone_reads_as_one_with_no_episodes():
    read = weather.parse({"episodes": [], "calm": 240.0, "length": 60.0, "now": None,
                          "next": None, "last": None, "replay": REPLAY})
    assert not read.episodic and read.now is None
    assert (read.replay.source, read.replay.played, read.replay.events, read.replay.speed) == \
        ("demo.jsonl.gz", 300, 1200, 2.0)
    assert read.replay.recorded_at.timestamp() == 1_000_000.5 and read.replay.finished_at is None
    assert weather.parse(dict(STATE, replay=REPLAY)).episodic


def test_the_announcer_publishes_the_replays_position(redis_url, tmp_path):
    from simcluster.generate import make_node
    from simcluster.recording import record_line

    path = tmp_path / "trace.jsonl"
    path.write_bytes(b"".join(record_line(1_000_000.0 + i, "Add", make_node(f"n{i}"))
                              for i in range(3)))
    client = redis_client(settings.REDIS_URL)
    with SimCluster(replay=path, replay_speed=0, kubelet=False) as sim:
        assert sim.replay.wait(10)
        weather.Announcer(sim.url, client).announce_once()
    read = weather.injected(client)
    client.delete(SIMCLUSTER_WEATHER)
    assert not read.episodic
    assert (read.replay.source, read.replay.played, read.replay.events) == ("trace.jsonl", 3, 3)
    assert read.replay.recorded_at.timestamp() == 1_000_002.0 and read.replay.finished_at
