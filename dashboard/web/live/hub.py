"""A web process's live sockets: one subscription per group, one render per fragment.

Why: a socket joining the owner's group itself would receive and decode every
flush (about 90 events, 20 KB, ten a second under churn) and render its own copy of
the same fragment, one render after another on Django's one database thread, so a
hundred viewers would saturate the process. So the process subscribes to a group
once and offers each message to its fragments. Sockets that show the same thing (the same `shared_key`: one
pod's page, the overview) form one fragment with one coalescing timer and one
render, sent to each of them.

A lone change is pushed at once; a burst is coalesced into one more push at the
end of PUSH_INTERVAL, so a fragment renders at most once per interval and always
ends on the latest state.
"""
import asyncio
import logging
import time
import weakref

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from redis.exceptions import TimeoutError as RedisTimeout

from dashboard.runtime.db_deadline import bounded_reads

log = logging.getLogger(__name__)

PUSH_INTERVAL = 0.5          # seconds: a person reads no faster; bursts are coalesced
REJOIN_PERIOD = 600.0        # the layer forgets members after 30 minutes (redis_urls.py)
RETRY_PERIOD = 1.0           # after the layer failed to deliver (Redis restarting)
JOIN_TIMEOUT = 10.0          # seconds a socket waits for the process to join the group


class Fragment:
    """The sockets showing one thing; the oldest decides what concerns them and renders.

    It keeps its last render until a message concerns it, so a socket joining a
    fragment that others keep up to date gets that render without a render of its own.
    """

    def __init__(self, key):
        self.key = key
        self.members = []
        self._scheduled = None
        self._last_push = 0.0
        self._latest = None      # the last render, while no message since concerned it
        self._concerned = 0      # messages that concerned it so far

    def offer(self, message: dict):
        if self.members and self.members[0].wants(message):
            self._concerned += 1
            self._latest = None
            self.schedule()

    def schedule(self):
        if self._scheduled is None or self._scheduled.done():
            delay = max(0.0, self._last_push + PUSH_INTERVAL - time.monotonic())
            self._scheduled = asyncio.ensure_future(self._push_after(delay))

    def cancel(self):
        if self._scheduled is not None:
            self._scheduled.cancel()

    async def current(self, member) -> str:
        """What the fragment shows now, for a socket that just joined it."""
        if self._latest is None:
            return await self._render(member)
        return self._latest

    async def _render(self, member) -> str:
        """`member`'s render, kept as the latest unless a message concerned the fragment
        while it ran."""
        concerned = self._concerned
        text = await render(member)
        if self._concerned == concerned:
            self._latest = text
        return text

    async def _push_after(self, delay):
        await asyncio.sleep(delay)  # the coalescing window, not a synchronisation
        self._last_push = time.monotonic()
        if not self.members:
            return
        try:
            text = await self._render(self.members[0])
        except Exception:
            log.exception("rendering %s for %d live sockets failed", self.key, len(self.members))
            return
        for member in list(self.members):
            try:
                await member.send(text_data=text)
            except Exception as exc:   # it closed while the render ran: its leave is coming
                log.debug("a live socket of %s closed before its push: %s", self.key, exc)


async def render(member) -> str:
    """A socket's render, in a worker thread of its own: renders only read, so they need
    not queue on Django's one thread for database work behind every socket's login."""
    return await database_sync_to_async(bounded_reads(member.render), thread_sensitive=False)()


class Hub:
    """One group's messages for this process's fragments, received once."""

    def __init__(self, layer, group: str):
        self.layer, self.group = layer, group
        self.fragments = {}      # key -> Fragment
        self._listener = None
        self._joined = None      # set once the listener is in the group
        self._joining = 0        # sockets waiting for that

    async def join(self, consumer) -> Fragment:
        """The consumer's fragment, once the process is in the group: a message sent after
        the socket was accepted must reach it (TimeoutError when Redis does not answer)."""
        if self._listener is None:
            self._joined = asyncio.Event()
            self._listener = asyncio.ensure_future(self._listen(self._joined))
        self._joining += 1
        try:
            await asyncio.wait_for(self._joined.wait(), JOIN_TIMEOUT)
        finally:
            self._joining -= 1
        key = consumer.shared_key()
        if key is None:
            key = ("socket", id(consumer))
        fragment = self.fragments.get(key)
        if fragment is None:
            fragment = self.fragments[key] = Fragment(key)
        fragment.members.append(consumer)
        return fragment

    async def leave(self, consumer, fragment: Fragment):
        fragment.members.remove(consumer)
        if not fragment.members:
            fragment.cancel()
            del self.fragments[fragment.key]
        if not self.fragments and not self._joining and self._listener is not None:
            self._listener.cancel()
            self._listener = None

    async def _listen(self, joined: asyncio.Event):
        channel = await self.layer.new_channel()
        member = asyncio.ensure_future(self._stay_joined(channel, joined))
        try:
            while True:
                try:
                    message = await self.layer.receive(channel)
                except asyncio.CancelledError:
                    raise
                except RedisTimeout:
                    # Idle: redis-py times a read out after 5 s, as long as channels_redis
                    # blocks on an empty channel; the read lost that race. Receive again.
                    _stop_if_cancelled()
                    continue
                except Exception:
                    _stop_if_cancelled()
                    log.exception("the %s group's messages could not be received; retrying",
                                  self.group)
                    await asyncio.sleep(RETRY_PERIOD)  # backing off, not synchronising
                    continue
                _stop_if_cancelled()
                for fragment in list(self.fragments.values()):
                    fragment.offer(message)
        finally:
            member.cancel()
            await asyncio.shield(self._discard(channel))

    async def _stay_joined(self, channel, joined: asyncio.Event):
        """In the group now and again every REJOIN_PERIOD, quiet or not (the layer drops
        members it has not seen join for its expiry); retried while Redis fails."""
        while True:
            try:
                await self.layer.group_add(self.group, channel)
            except asyncio.CancelledError:
                raise
            except Exception:
                _stop_if_cancelled()
                log.exception("joining the %s group failed; retrying", self.group)
                await asyncio.sleep(RETRY_PERIOD)  # backing off, not synchronising
                continue
            joined.set()
            await asyncio.sleep(REJOIN_PERIOD)     # renewing the membership, not synchronising

    async def _discard(self, channel):
        """Out of the group, else the owner keeps sending there until the layer expires it."""
        try:
            await self.layer.group_discard(self.group, channel)
        except Exception as exc:   # Redis gone too: the group's expiry will drop the channel
            log.warning("leaving the %s group failed: %s", self.group, exc)


def _stop_if_cancelled():
    """CancelledError if this task was asked to stop. A blocking Redis read may swallow the
    cancellation and answer or fail instead (redis-py issue 2028; channels_redis receives
    with BZPOPMIN), and the listener would then go on receiving for good: a listener
    after its last socket left, and once an event loop that never closed."""
    if asyncio.current_task().cancelling():
        raise asyncio.CancelledError


_hubs = weakref.WeakKeyDictionary()   # event loop -> {group: Hub}


def hub(group: str) -> Hub:
    """The running loop's hub of `group` (each loop, as each test has, gets its own)."""
    hubs = _hubs.setdefault(asyncio.get_running_loop(), {})
    if group not in hubs:
        hubs[group] = Hub(get_channel_layer(), group)
    return hubs[group]
