"""Reservations: pods recently handed to a claim, kept out of the ready queue for a TTL.

A claim changes the pod on the API server; the watch brings that change back a
little later. Until then the pod still looks idle, and without a reservation the
next refresh would queue it again and a second request would race for it. Every
reservation lives the same TTL, so insertion order is expiry order and expiring
is a pop from the front. Time is passed in.
"""
from collections import OrderedDict

DEFAULT_TTL = 2.0   # seconds: well beyond a watch's usual propagation delay


class Reservations:
    def __init__(self, ttl: float = DEFAULT_TTL):
        if ttl <= 0:
            raise ValueError("a reservation TTL must be positive")
        self.ttl = float(ttl)
        self._until: OrderedDict[str, float] = OrderedDict()

    def __len__(self) -> int:
        return len(self._until)

    def reserve(self, key: str, now: float) -> None:
        self._until.pop(key, None)
        self._until[key] = now + self.ttl

    def release(self, key: str) -> bool:
        return self._until.pop(key, None) is not None

    def is_reserved(self, key: str, now: float) -> bool:
        until = self._until.get(key)
        return until is not None and until > now

    def expire(self, now: float) -> list:
        """Drop the reservations whose TTL has passed; returns their keys."""
        gone = []
        until = self._until
        while until:
            key, when = next(iter(until.items()))
            if when > now:
                break
            until.popitem(last=False)
            gone.append(key)
        return gone

    def next_expiry(self) -> float | None:
        return next(iter(self._until.values()), None)

    def remaining(self, now: float, limit: int) -> list:
        """(key, seconds left) of the first `limit` live reservations, soonest first."""
        out = []
        for key, until in self._until.items():
            if len(out) >= limit:
                break
            if until > now:
                out.append((key, until - now))
        return out
