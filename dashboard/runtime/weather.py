"""The simulated cluster's fault episodes, as the pages announce them.

Under `manage.py up` the simulated cluster injects faults in episodes (simcluster's
episodes.py: lost watch events, failing binds, a slow warm pool, a minute each, then
calm). `up` reads what is on from the cluster every few seconds and publishes it here;
the overview and the banner say which warnings the cluster is causing on purpose, and
when that ends. A simulated cluster playing a recording (`up --replay`, simcluster's
replay.py) says so the same way: which recording, event i of n, the recorded time of the
last one played and the speed. Against a real cluster nothing publishes and nothing is
announced.
"""
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone

import orjson
import redis
import urllib3

from dashboard.wire.keys import SIMCLUSTER_WEATHER, SIMCLUSTER_WEATHER_TTL

READ_EVERY = 2.0      # seconds between `up`'s readings of the cluster's state


@dataclass(frozen=True)
class Episode:
    name: str
    title: str
    what: str            # what it does, in a sentence ("" for one to come)
    since: datetime | None
    until: datetime | None

    def as_dict(self) -> dict:
        return {"name": self.name, "title": self.title, "what": self.what,
                "since": _epoch(self.since), "until": _epoch(self.until)}


@dataclass(frozen=True)
class Replay:
    """Where a replay of a recording is (simcluster/replay.py's state)."""
    source: str                  # the recording's file name
    events: int                  # records in it
    played: int                  # records played so far
    recorded_at: datetime | None   # when the last one played was recorded
    speed: float                 # times the recorded pace; 0: as fast as possible
    reschedule: bool             # the recording's pods left for the scheduler to place
    finished_at: datetime | None   # when the last record was played

    def as_dict(self) -> dict:
        return {"source": self.source, "events": self.events, "played": self.played,
                "recorded_at": _epoch(self.recorded_at), "speed": self.speed,
                "reschedule": self.reschedule, "finished_at": _epoch(self.finished_at)}


@dataclass(frozen=True)
class Weather:
    now: Episode | None      # the fault being injected now
    next: Episode | None     # the one to come (its `since` is when)
    calm: float              # seconds of calm between episodes
    length: float            # seconds an episode lasts
    last: Episode | None = None   # the one that ended last (its `until` is when)
    # Whether what `last` caused may still show: warnings clear over a window after their
    # cause ends (bind failures over the health window, drift at the next comparison).
    settling: bool = False
    replay: Replay | None = None  # the recording the cluster plays, if it plays one

    @property
    def episodic(self) -> bool:
        """Whether the cluster runs fault episodes (a replay alone runs none)."""
        return bool(self.now or self.next or self.last)

    def as_dict(self) -> dict:
        return {"now": self.now and self.now.as_dict(), "next": self.next and self.next.as_dict(),
                "last": self.last and self.last.as_dict(), "settling": self.settling,
                "calm_seconds": self.calm, "length_seconds": self.length,
                "replay": self.replay and self.replay.as_dict()}


def _epoch(moment: datetime | None) -> float | None:
    return None if moment is None else moment.timestamp()


def _at(seconds) -> datetime | None:
    return None if seconds is None else datetime.fromtimestamp(seconds, timezone.utc)


def _replay(state: dict | None) -> Replay | None:
    if not state:
        return None
    return Replay(state["source"], state["events"], state["played"],
                  _at(state.get("recorded_at")), state["speed"], state["reschedule"],
                  _at(state.get("finished_at")))


def parse(state: dict, settle: float = 0.0, now: float | None = None) -> Weather | None:
    """A cluster's `weather` state (simcluster/episodes.py, with its replay's under
    "replay") as the pages use it; None when it runs no episodes and plays no recording.
    `settle`: seconds after an episode ends that what it caused may still show."""
    replay = _replay((state or {}).get("replay"))
    if not state or not (state.get("episodes") or replay):
        return None
    if not state.get("episodes"):
        return Weather(None, None, state.get("calm", 0.0), state.get("length", 0.0),
                       replay=replay)
    on, coming, last = state.get("now"), state.get("next"), state.get("last")
    now = time.time() if now is None else now
    return Weather(
        Episode(on["name"], on["title"], on["what"], _at(on["since"]), _at(on["until"]))
        if on else None,
        Episode(coming["name"], coming["title"], "", _at(coming["at"]), None)
        if coming else None,
        state["calm"], state["length"],
        Episode(last["name"], last["title"], "", None, _at(last["ended"])) if last else None,
        bool(last) and now - last["ended"] < settle, replay)


def injected(client: redis.Redis, settle: float = 0.0) -> Weather | None:
    """What `up` last published; None outside `up`, or when Redis does not answer."""
    try:
        raw = client.get(SIMCLUSTER_WEATHER)
    except redis.RedisError:
        return None
    return parse(orjson.loads(raw), settle) if raw else None


class Announcer:
    """`up`'s thread reading the cluster's weather and replay (GET /simcluster/v1/state)
    and publishing them, the replay's under the weather's "replay". A cluster or Redis that does not answer skips a reading: the key
    expires, and the pages stop announcing what nobody can vouch for."""

    def __init__(self, cluster_url: str, client: redis.Redis, every: float = READ_EVERY):
        self.url = f"{cluster_url}/simcluster/v1/state"
        self.client, self.every = client, every
        self.http = urllib3.PoolManager(timeout=urllib3.Timeout(total=every))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="weather", daemon=True)

    def start(self) -> "Announcer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def announce_once(self) -> None:
        try:
            response = self.http.request("GET", self.url, retries=False)
            if response.status != 200:
                return
            state = orjson.loads(response.data)
            weather = dict(state.get("weather") or {}, replay=state.get("replay"))
            self.client.set(SIMCLUSTER_WEATHER, orjson.dumps(weather),
                            ex=SIMCLUSTER_WEATHER_TTL)
        except (urllib3.exceptions.HTTPError, redis.RedisError, orjson.JSONDecodeError):
            pass

    def _run(self) -> None:
        while not self._stop.is_set():
            self.announce_once()
            self._stop.wait(self.every)
