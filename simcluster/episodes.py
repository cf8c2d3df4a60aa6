"""Fault episodes: the simulated cluster's faults come one at a time, for a while, then calm.

A real API server does not lose watch events and rarely fails a Binding; a demo that
did so all the time kept every warning on for good, which taught people to ignore them.
An episode turns a few knobs (faults, warm pools) for `length` seconds and puts them back;
between episodes the cluster is calm for `calm` seconds. The episodes take turns in the
order given. `state()` says what is on now, since and until when, and what comes next
(wall-clock epoch seconds), so whoever shows the cluster can announce it as injected.

    weather = Weather(cluster, clock=time.time)
    weather.update(episodes=["failing-binds", "lost-events"], calm=240, length=60)
    weather.update(episodes=[])     # calm for good: the knobs are back as they were
"""
import threading
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Episode:
    title: str      # as the announcement names it
    what: str       # what it does, in a sentence
    knobs: dict     # {"faults" | "pools": {knob: value}} while it lasts


EPISODES = {
    "lost-events": Episode(
        "Lost watch events", "5% of the cluster's changes send no watch event: the cache "
        "drifts from the cluster until a comparison finds it and the owner relists",
        {"faults": {"lose_event_rate": 0.05}}),
    "failing-binds": Episode(
        "Failing binds", "30% of Bindings are answered 500 Internal Server Error: binds are "
        "retried, and some pods are forgotten", {"faults": {"bind_failure_rate": 0.3}}),
    "slow-pool": Episode(
        "Slow warm pools", "claimed pool pods come back idle after 40 s instead of a few: "
        "claims queue, wait and expire", {"pools": {"hold": 40.0}}),
}


class Weather:
    """Runs the episodes on a cluster's knob holders (`cluster.faults`, `cluster.pools`:
    anything with `knobs()` and `update(**knobs)`) in a thread of its own."""

    def __init__(self, cluster, clock=time.time):
        self.cluster = cluster
        self.clock = clock
        self.episodes: list[str] = []
        self.calm = 240.0
        self.length = 60.0
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = None
        self._turn = 0                 # the next episode's index in `episodes`
        self._current = None           # (name, since, until, {holder: knobs to restore})
        self._next_at = None           # when the next episode begins
        self._last = None              # (name, when it ended)

    # -- control -------------------------------------------------------------------------
    def update(self, episodes: list | None = None, calm: float | None = None,
               length: float | None = None, first_in: float | None = None) -> dict:
        """Set the cycle: which episodes in turn, seconds of calm between them and seconds
        each lasts; `first_in`: seconds until the first (default: a calm's). An episode
        on now ends first. Unknown names and non-positive times are a ValueError."""
        if episodes is not None:
            if not isinstance(episodes, list) or not all(isinstance(e, str) for e in episodes):
                raise ValueError("episodes: a list of names")
            unknown = [name for name in episodes if name not in EPISODES]
            if unknown:
                raise ValueError(f"unknown episodes {unknown}: one of {', '.join(EPISODES)}")
        for name, value in (("calm", calm), ("length", length), ("first_in", first_in)):
            if value is not None and (not isinstance(value, (int, float)) or value < 0
                                      or (name != "first_in" and value <= 0)):
                raise ValueError(f"{name}: a positive number of seconds")
        with self._lock:
            self._end()
            if episodes is not None:
                self.episodes, self._turn = list(episodes), 0
            self.calm = float(calm) if calm is not None else self.calm
            self.length = float(length) if length is not None else self.length
            self._next_at = (self.clock() + (self.calm if first_in is None else first_in)
                             if self.episodes else None)
        self._start_thread()
        self._wake.set()
        return self.state()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread:
            self._thread.join(timeout=5)
        with self._lock:
            self._end()

    # -- what is on ----------------------------------------------------------------------
    def state(self) -> dict:
        """{"episodes", "calm", "length", "now": the episode on (or None), "next": the one
        to come (or None), "last": the one that ended last (or None)}; times are epoch
        seconds."""
        with self._lock:
            now = None
            if self._current:
                name, since, until, _ = self._current
                now = {"name": name, "title": EPISODES[name].title,
                       "what": EPISODES[name].what, "since": since, "until": until}
            coming = None
            if self.episodes and self._next_at is not None:
                name = self.episodes[self._turn % len(self.episodes)]
                coming = {"name": name, "title": EPISODES[name].title, "at": self._next_at}
            last = None
            if self._last:
                name, ended = self._last
                last = {"name": name, "title": EPISODES[name].title, "ended": ended}
            return {"episodes": list(self.episodes), "calm": self.calm, "length": self.length,
                    "now": now, "next": coming, "last": last}

    def step(self) -> float | None:
        """Begin or end what is due; seconds until the next change (None: none planned).
        The thread calls it; tests may call it with their own clock."""
        with self._lock:
            now = self.clock()
            if self._current and now >= self._current[2]:
                self._end()
                self._next_at = now + self.calm if self.episodes else None
            if not self._current and self._next_at is not None and now >= self._next_at:
                self._begin(now)
            due = self._current[2] if self._current else self._next_at
            return None if due is None else max(0.0, due - now)

    # -- inside ----------------------------------------------------------------------------
    def _begin(self, now: float) -> None:
        name = self.episodes[self._turn % len(self.episodes)]
        self._turn += 1
        restore = {}
        for holder, knobs in EPISODES[name].knobs.items():
            target = getattr(self.cluster, holder)
            before = target.knobs()
            restore[holder] = {knob: before[knob] for knob in knobs}
            target.update(**knobs)
        self._current = (name, now, now + self.length, restore)
        self._next_at = None

    def _end(self) -> None:
        if self._current:
            for holder, knobs in self._current[3].items():
                getattr(self.cluster, holder).update(**knobs)
            self._last = (self._current[0], min(self.clock(), self._current[2]))
            self._current = None

    def _start_thread(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="simcluster-weather",
                                            daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            wait = self.step()
            self._wake.wait(60.0 if wait is None else min(wait, 60.0))
            self._wake.clear()
