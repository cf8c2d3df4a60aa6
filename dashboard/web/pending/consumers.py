"""The Pending page's socket: a nudge (live/nudge.py) when the queue may have moved; the
page's list then asks for itself again with its own filters and page."""
import time

from dashboard.web.live.consumers import LiveConsumer
from dashboard.web.live.nudge import NUDGE, PendingVersion, Pace

# Cache events that move a pod into or out of the queue (the queue is the pending pods the
# cache does not hold: an assumed pod waits for its bind, not in the queue).
_QUEUE_EVENTS = frozenset({"pod_assumed", "pod_forgotten", "pod_expired", "pod_removed"})


class PendingConsumer(LiveConsumer):
    """Every Pending page of the process shares one nudge (`shared_key`): what it says does
    not depend on the page's filters."""

    clock = staticmethod(time.monotonic)   # tests pass their own

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._pace, self._version = Pace(), PendingVersion()

    def shared_key(self):
        return "pending"

    def wants(self, message: dict) -> bool:
        moved = self._version.moved(message) or any(
            event.get("kind") in _QUEUE_EVENTS for event in message.get("events") or ())
        return self._pace.offer(moved, self.clock())

    def render(self) -> str:
        return NUDGE
