"""A silent API server (issue 22): the owner hears how long each watch has said nothing,
from the decoder's messages, and publishes it with the bound for health's feed check.
Time is passed in; the last test runs a real decoder process on a scripted server that
holds its watch open and sends nothing."""
import functools
import marshal
from types import SimpleNamespace

import pytest

from dashboard.owner import decoder
from dashboard.owner.decoder import DecoderProcess, ReflectorView
from dashboard.owner.status import watch_silence
from dashboard.readmodel import health
from dashboard.readmodel.read_model import OwnerStatus
from tests.dashboard.feedhelpers import WAIT, core_api_at
from tests.dashboard.readmodel.test_health import T


class Clock:
    def __init__(self, now):
        self.now = now

    def __call__(self):
        return self.now


def test_the_decoder_ships_each_reflectors_silence():
    reflector = SimpleNamespace(state="watching", resource_version="7", stats={},
                                last_watch_end="silent", silent_for=lambda: 42.5,
                                forbidden=False)
    sent = []
    decoder._ship(SimpleNamespace(send_bytes=sent.append), decoder._Outbox(),
                  {"pods": reflector}, {})
    views, _, _, _ = marshal.loads(sent[0])
    assert views["pods"] == ("watching", "7", {}, "silent", 42.5, False)


def test_a_views_silence_grows_on_the_owners_clock_until_the_decoder_says_otherwise():
    clock = Clock(1000.0)
    view = ReflectorView("pods", process=None, clock=clock)
    assert view.silent_for() is None                  # the decoder has not said yet
    view._update("watching", "7", {}, "", 3.0)
    clock.now = 1010.0
    assert view.silent_for() == 13.0                  # no message: still silent, and longer
    assert view.silent_for(now=1020.0) == 23.0
    view._update("new", "", {}, "")                   # a dead decoder's views: no word heard
    assert view.silent_for() == 13.0
    view._update("watching", "8", {}, "", 0.0)        # a bookmark
    assert view.silent_for() == 0.0


def test_the_owner_publishes_each_kinds_silence_and_the_bound():
    clock = Clock(500.0)
    pods, nodes = ReflectorView("pods", None, clock), ReflectorView("nodes", None, clock)
    pods._update("watching", "7", {}, "", 80.04)
    assert watch_silence([pods, nodes], 75.0) == {"watch_silent": {"pods": 80.0},
                                                  "watch_silence": 75.0}


@pytest.mark.slow
def test_a_server_holding_a_silent_watch_shows_in_the_owners_status_and_health(scripted):
    script, api = scripted
    script.hold.set()   # every watch: headers, then nothing
    process = DecoderProcess(lambda item: None,
                             functools.partial(core_api_at, api.api_client.configuration.host),
                             kinds=("pods",), resume_from={"pods": "5"},
                             options={"silence": 0.5}).start()
    try:
        pods = process.views["pods"]
        assert pods.wait_for(lambda v: v.stats.get("silent", 0) >= 1, WAIT), \
            "the silent watch was never restarted"
        status = watch_silence(process.reflectors, 0.5)
    finally:
        process.stop()
    assert not process.process.is_alive()
    assert status["watch_silent"]["pods"] >= 0.5
    check = health.feed_check(OwnerStatus("live", {"synced": True, "feed_backlog": 0,
                                                   "feed_lag": 0.0, **status}), T)
    assert check.level == health.WARN and check.message.startswith("Watch silent for ")
    assert check.message.endswith(" s (pods)")
    watches = [path for path in script.requests if "watch=true" in path]
    assert len(watches) >= 2 and all("resourceVersion=5" in path for path in watches)
