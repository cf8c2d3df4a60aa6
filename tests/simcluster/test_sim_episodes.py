"""Fault episodes: one at a time, for `length` seconds, then calm; the knobs come back
as they were; what is on and what comes next is told with wall-clock times."""
import orjson
import pytest

from simcluster.episodes import EPISODES, Weather
from simcluster.faults import Faults
from simcluster.pools import WarmPools


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


class Knobs:
    """What an episode turns: the cluster's faults and pools."""

    def __init__(self):
        self.faults = Faults()
        self.pools = WarmPools(api=None, hold=8.0)


@pytest.fixture
def weather():
    clock = Clock()
    w = Weather(Knobs(), clock=clock)
    w.clock_ = clock
    yield w
    w.stop()


def test_episodes_take_turns_with_calm_between_and_put_the_knobs_back(weather):
    clock, cluster = weather.clock_, weather.cluster
    cluster.faults.update(bind_failure_rate=0.01)          # what was set before stays after
    state = weather.update(episodes=["failing-binds", "slow-pool"], calm=100, length=30)
    assert state["now"] is None
    assert state["next"] == {"name": "failing-binds", "title": "Failing binds", "at": 1100.0}
    assert weather.step() == 100.0 and cluster.faults.bind_failure_rate == 0.01

    clock.now = 1100.0
    assert weather.step() == 30.0
    assert cluster.faults.bind_failure_rate == 0.3
    now = weather.state()["now"]
    assert (now["name"], now["since"], now["until"]) == ("failing-binds", 1100.0, 1130.0)
    assert now["what"] == EPISODES["failing-binds"].what and weather.state()["next"] is None

    clock.now = 1130.0
    assert weather.step() == 100.0
    assert cluster.faults.bind_failure_rate == 0.01 and weather.state()["now"] is None
    assert weather.state()["last"] == {"name": "failing-binds", "title": "Failing binds",
                                       "ended": 1130.0}
    assert weather.state()["next"]["name"] == "slow-pool"

    clock.now = 1230.0
    weather.step()
    assert cluster.pools.hold == 40.0 and weather.state()["now"]["name"] == "slow-pool"
    clock.now = 1260.0
    weather.step()
    assert cluster.pools.hold == 8.0
    assert weather.state()["next"] == {"name": "failing-binds", "title": "Failing binds",
                                       "at": 1360.0}


def test_no_episodes_means_calm_and_an_episode_on_ends_at_once(weather):
    weather.update(episodes=["lost-events"], first_in=0, length=60)
    weather.step()
    assert weather.cluster.faults.lose_event_rate == 0.05
    state = weather.update(episodes=[])
    assert weather.cluster.faults.lose_event_rate == 0.0
    assert state["now"] is None and state["next"] is None and weather.step() is None


@pytest.mark.parametrize("knobs, message", [
    ({"episodes": ["hail"]}, r"unknown episodes \['hail'\]"),
    ({"episodes": "lost-events"}, "episodes: a list of names"),
    ({"calm": 0}, "calm: a positive number"),
    ({"length": -1}, "length: a positive number"),
    ({"first_in": "soon"}, "first_in: a positive number"),
])
def test_bad_knobs_are_refused_and_change_nothing(weather, knobs, message):
    weather.update(episodes=["failing-binds"], calm=50)
    with pytest.raises(ValueError, match=message):
        weather.update(**knobs)
    assert weather.state()["episodes"] == ["failing-binds"] and weather.calm == 50


def test_the_control_endpoint_starts_episodes_and_the_state_tells_them(sim, raw):
    resp, body = raw.call("POST", "/simcluster/v1/weather",
                          {"episodes": ["failing-binds"], "first_in": 0, "length": 30})
    assert resp.status == 200
    state = orjson.loads(raw.call("GET", "/simcluster/v1/state")[1])
    deadline = 50
    while state["weather"]["now"] is None and deadline:   # the weather's thread begins it
        deadline -= 1
        sim.weather.step()
        state = orjson.loads(raw.call("GET", "/simcluster/v1/state")[1])
    assert state["weather"]["now"]["name"] == "failing-binds"
    assert state["faults"]["bind_failure_rate"] == 0.3
    resp, body = raw.call("POST", "/simcluster/v1/weather", {"episodes": ["snow"]})
    assert resp.status == 400 and b"unknown episodes" in body
    raw.call("POST", "/simcluster/v1/weather", {"episodes": []})
    assert sim.faults.bind_failure_rate == 0.0

