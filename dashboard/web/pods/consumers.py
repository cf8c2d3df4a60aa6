"""The pods pages, live: the list's rows and one pod's state, diagram and timeline.

Why two consumers: the list re-renders the page of rows its browser shows (the
filters come in the websocket URL's query string, as the page's own URL has them),
and only after flushes that touch pods; the detail re-renders only after flushes
with an event for its pod. Both push the same partials the pages render. The detail's
socket also nudges (live/nudge.py) the pod's diagnosis, which nodes and other pods move.
"""
import threading
import time
from urllib.parse import parse_qs

from django.template.loader import render_to_string

from dashboard.web.live.consumers import LiveConsumer, _changes_cache
from dashboard.web.live.nudge import NUDGE, Pace, PendingVersion
from dashboard.web.pods.query import BadFilter, PodFilters
from dashboard.web.pods.views import pod_detail_context, pod_list_context

BAD_FILTER = 4400   # close code: the query string's filters were refused


def _pod_events(message: dict):
    return (event for event in message.get("events") or ()
            if str(event.get("kind", "")).startswith("pod_"))


class PodListConsumer(LiveConsumer):
    """Pushes pods.html#pod-rows for the filters in the URL's query string."""

    async def connect(self):
        """Filters the page would refuse close the socket (BAD_FILTER), once LiveConsumer
        has let the user in: anonymous sockets learn they must log in first."""
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        try:
            self.filters = PodFilters.parse({key: values[-1] for key, values in query.items()})
        except BadFilter:
            self.filters = None
            self.push_on_connect = False   # nothing to show: the socket closes at once
        await super().connect()
        if self.filters is None:
            await self.close(code=BAD_FILTER)

    def shared_key(self):
        return ("pods", self.filters)

    def wants(self, message: dict) -> bool:
        if self.filters is None:
            return False
        namespace = self.filters.namespace
        return any(not namespace or event.get("namespace") == namespace
                   for event in _pod_events(message))

    def render(self) -> str:
        try:
            context = pod_list_context(self.filters, form=False)
        except BadFilter as exc:   # its page number is now past the last page
            return render_to_string("dashboard/pods.html#rows-gone", {"error": str(exc)})
        return render_to_string("dashboard/pods.html#pod-rows", context)


class PodDetailConsumer(LiveConsumer):
    """Pushes pod_detail.html#pod-live for the pod in the URL after its own events, and a
    nudge, paced, after changes that may move its diagnosis: any node's or placed pod's
    (what is free where), or a pending pod's (the pod itself, kube-scheduler's word on it).
    Any message on this socket has the page ask for the diagnosis again (a pod of its own
    moving moves it too); the section is there only while the pod is pending."""

    clock = staticmethod(time.monotonic)   # tests pass their own

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._lock = threading.Lock()
        self._own = True       # its pod moved since the last render (the first draws it)
        self._pace, self._version = Pace(), PendingVersion()

    async def connect(self):
        self.uid = self.scope["url_route"]["kwargs"]["uid"]
        await super().connect()

    def shared_key(self):
        return ("pod", self.uid)

    def wants(self, message: dict) -> bool:
        own = any(event.get("key") == self.uid for event in _pod_events(message))
        moved = self._version.moved(message) or _changes_cache(message)
        with self._lock:
            self._own = self._own or own
        return self._pace.offer(moved, self.clock()) or own

    def render(self) -> str:
        with self._lock:
            own, self._own = self._own, False
        if not own:
            return NUDGE
        context = pod_detail_context(self.uid)
        if context is None:     # the pod's history was pruned meanwhile
            context = {"missing": self.uid}
        return render_to_string("dashboard/pod_detail.html#pod-live", context)
