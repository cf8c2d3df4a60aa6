"""Nudges: a word on a page's socket that what a fragment shows may have moved, so the
fragment asks for itself again over htmx (`hx-trigger="htmx:wsAfterMessage from:<socket>"`).

Why a nudge and not the fragment itself: the Pending page's list and a pod's diagnosis are
the cache owner's answers (`pending_pods`, `diagnose`), asked over Redis per filter and
page, not rows a shared render could read; the page knows its own filters and asks. Why
paced: under churn nearly every flush (ten a second) moves a node or a pod, and each nudge
costs every open page one question to the owner; one every NUDGE_INTERVAL at most keeps
that bounded whatever the churn. The owner flushes (and so offers a message) every 100 ms
even when idle, so a change held back by the pace goes out with the first flush past it:
the page always ends on the latest state.
"""
import math

NUDGE = "may have changed"    # no element: htmx swaps nothing, the page's listener asks
NUDGE_INTERVAL = 2.0          # seconds between two nudges of one fragment, at the least


class Pace:
    """At most one nudge per `interval`: `offer(changed, now)` says whether to nudge now,
    keeping a change it held back for the next offer past the interval."""

    def __init__(self, interval: float = NUDGE_INTERVAL):
        self.interval = interval
        self._owed = False
        self._last = -math.inf

    def offer(self, changed: bool, now: float) -> bool:
        self._owed = self._owed or changed
        if self._owed and now - self._last >= self.interval:
            self._owed, self._last = False, now
            return True
        return False


class PendingVersion:
    """Whether a flush's status says the pending pods moved: one came, changed or left (the
    owner's `pending_changes`), or a sweep recounted their reasons (`pending_sweeps`).
    Pending pods are not in the cache, so no cache event says so. The first status seen is
    the baseline; a status without these (another owner's, an empty one) says nothing."""

    def __init__(self):
        self._last = None

    def moved(self, message: dict) -> bool:
        status = message.get("status") or {}
        if "pending_changes" not in status:
            return False
        version = (status.get("pending_changes"), status.get("pending_sweeps"))
        moved = self._last is not None and version != self._last
        self._last = version
        return moved
