"""Live pages over websockets: the owner's flushes, pushed as the fragments pages render.

The owner publishes one `cache.events` message per flush (every 100 ms under churn) to
the `events` group. The process's hub (`hub.py`) receives it once and offers it to
each fragment, which pushes at most once per PUSH_INTERVAL. Consumers render from the
same partial the page and its htmx refresh use, so the three never differ. htmx's ws
extension swaps the fragment in place by its id.

This module holds the base every live page's consumer derives from, the header's socket
(every page has it), and what several pages' consumers share; each page's consumer lives
beside its view.
"""
from urllib.parse import parse_qs

from channels.generic.websocket import AsyncWebsocketConsumer
from django.template.loader import render_to_string

from dashboard.readmodel import read_model
from dashboard.web.live import hub as live_hub
from dashboard.wire.keys import EVENTS_GROUP

BAD_INPUT = 4400     # close code: the socket's URL asked for something that cannot be shown
NOT_FOUND = 4404     # close code: no live page has a socket at that path

class LiveConsumer(AsyncWebsocketConsumer):
    """A live page's socket: logged-in users only; pushes `render()` after the owner's flushes.

    Subclasses say what they show (`render`, run in a thread since it reads the
    database), which flushes concern them (`wants`, default all), and whether
    other sockets show the same (`shared_key`: then one render serves them all).
    The owner publishes a flush once its rows are written, so a render after it
    shows it. One push follows the connect: a change between the page's render
    and the socket joining would otherwise be missed until the next one.
    """
    _fragment = None    # also for a socket a subclass refused before connecting
    push_on_connect = True
    group = EVENTS_GROUP   # where the changes it shows are announced
    # No channel of its own: the hub receives for every socket of the process. (With one,
    # each socket kept a receive pending on the layer, and channels_redis hands a message
    # between them under one lock: 200 such sockets stalled the process's connects and
    # closes for seconds.) An alias no layer is configured under gives none.
    channel_layer_alias = None

    async def connect(self):
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)  # the page's login redirect cannot happen on a socket
            return
        self._fragment = await live_hub.hub(self.group).join(self)
        await self.accept()
        if self.push_on_connect:   # to this socket alone: the others are up to date
            await self.send(text_data=await self._fragment.current(self))

    async def disconnect(self, code):
        if self._fragment is not None:
            await live_hub.hub(self.group).leave(self, self._fragment)
            self._fragment = None

    async def receive(self, text_data=None, bytes_data=None):
        """Browsers have nothing to say on these sockets; whatever they send is ignored."""

    def shared_key(self):
        """What this socket shows, when another socket with the same key shows the same
        (its `wants` and `render` then hold no state of the socket's own); None: its own."""
        return None

    def wants(self, message: dict) -> bool:
        return True

    def render(self) -> str:
        raise NotImplementedError

class NoSuchSocket(AsyncWebsocketConsumer):
    """Any path no live page serves: closed (4401 to an anonymous caller, as everywhere, else
    4404), where Channels' router would fail the connection with an exception."""

    async def connect(self):
        user = self.scope.get("user")
        await self.close(code=NOT_FOUND if user is not None and user.is_authenticated
                         else 4401)

class HeaderConsumer(LiveConsumer):
    """The header's owner badge on every page: its sequence number moves with each flush.
    One render serves every page open in the process (they all show the same)."""

    def shared_key(self):
        return "header"

    def render(self) -> str:
        return render_to_string("dashboard/components.html#owner-source",
                                {"owner": read_model.owner_status()})

def _query(scope) -> dict:
    """The socket URL's query string, one value a name (the last)."""
    return {key: values[-1]
            for key, values in parse_qs(scope.get("query_string", b"").decode("latin-1")).items()}

def _nodes_touched(message: dict) -> set:
    """Node names a flush changed: a node event's own, a pod event's node."""
    return {event.get("key") if str(event.get("kind", "")).startswith("node_")
            else event.get("node") for event in message.get("events") or ()} - {None, ""}

def _changes_cache(message: dict) -> bool:
    return any(event.get("kind") != "snapshot_updated" for event in message.get("events") or ())
