"""The feed's lag: how many seconds the cache is behind the watch events it received.

The decoder process stamps each message it ships with the moment its oldest item came
off the watch stream (`received`, wall-clock epoch seconds: the decoder runs on the
owner's machine, so the clocks are one). The lag the owner publishes with each flush is
the larger of

- the age of the oldest item still queued for the owner: it grows while nothing is
  applied, so a stalled or slow owner shows, and
- the longest any item applied since the previous flush had waited: a burst applied
  just before the flush would otherwise read as no lag at all.

Why from the moment the decoder read the event: watch events carry no time of their
own (a pod's timestamps are whole seconds and not set on every change), so that moment
is the earliest this side can know of. Time spent in the API server and the socket
before it is not counted; time in the decoder's batching, the pipe and the owner's
queue is.
"""
import itertools
import queue

STAMP_LOOKAHEAD = 8   # queued items looked at for a stamp (a comparison's has none)


class FeedLag:
    def __init__(self, feed: queue.Queue):
        self.feed = feed
        self._waited = 0.0    # the longest wait of the items applied since the last flush

    def applied(self, received: float | None, now: float) -> None:
        """An item stamped `received` was applied at `now`."""
        if received is not None:
            self._waited = max(self._waited, now - received)

    def seconds(self, now: float) -> float:
        """The lag at `now`, in seconds (0 when nothing waits and nothing waited)."""
        with self.feed.mutex:
            received = next((item.received for item in itertools.islice(
                self.feed.queue, STAMP_LOOKAHEAD) if getattr(item, "received", None)
                is not None), None)
        queued = now - received if received is not None else 0.0
        return round(max(0.0, self._waited, queued), 3)

    def new_window(self) -> None:
        """The flush published the lag: the waits of applied items start again."""
        self._waited = 0.0
