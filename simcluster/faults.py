"""Fault knobs: failed or slow binds, conflicting pod updates and lost watch events,
changeable at any time.

Draws come from one seeded RNG so a run with the same knobs fails the same share.
"""

import random
import threading
import time
from dataclasses import dataclass, field

from simcluster.status import ApiError


@dataclass
class Faults:
    bind_failure_rate: float = 0.0   # share of client binds answered with an error
    bind_failure_code: int = 500     # 409 is a Conflict; any other code a plain failure
    bind_delay: float = 0.0          # seconds every client bind waits before it runs
    lose_event_rate: float = 0.0     # share of writes whose watch event is never sent
    update_conflict_rate: float = 0.0  # share of client pod updates/patches answered 409
    seed: int = 0
    _rng: random.Random = field(default=None, repr=False, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def __post_init__(self):
        self._rng = random.Random(self.seed)

    def _draw(self, rate: float) -> bool:
        if rate <= 0:
            return False
        with self._lock:
            return self._rng.random() < rate

    def update(self, **knobs) -> dict:
        """Set knobs by name (unknown names are an error); returns all knobs."""
        for name, value in knobs.items():
            if name not in self.knobs():
                raise ValueError(f"unknown fault knob: {name}")
            setattr(self, name, type(getattr(self, name))(value))
        return self.knobs()

    def knobs(self) -> dict:
        return {k: getattr(self, k) for k in _KNOBS}

    def before_bind(self, namespace: str, name: str) -> None:
        """Delay and/or fail a client's bind, before it touches the pod."""
        if self.bind_delay > 0:
            time.sleep(self.bind_delay)
        if self._draw(self.bind_failure_rate):
            if self.bind_failure_code == 409:
                raise ApiError(409, f'Operation cannot be fulfilled on pods/binding "{name}": '
                                    "the object has been modified; please apply your changes "
                                    "to the latest version and try again", "Conflict",
                               {"name": name, "kind": "pods/binding"})
            raise ApiError(self.bind_failure_code, "Internal error occurred: simulated bind "
                                                   "failure", None,
                           {"causes": [{"message": "simulated bind failure"}]})

    def before_update(self, resource: str, name: str) -> None:
        """Fail a client's PUT or PATCH of a pod with a 409 Conflict, as if another writer
        had changed it first (the pod itself is left as it is)."""
        if resource == "pods" and self._draw(self.update_conflict_rate):
            raise ApiError(409, f'Operation cannot be fulfilled on pods "{name}": the object '
                                "has been modified; please apply your changes to the latest "
                                "version and try again", "Conflict",
                           {"name": name, "kind": "pods"})

    def lose_event(self) -> bool:
        """Consulted by the store for every write."""
        return self._draw(self.lose_event_rate)


_KNOBS = ("bind_failure_rate", "bind_failure_code", "bind_delay", "lose_event_rate",
          "update_conflict_rate")
