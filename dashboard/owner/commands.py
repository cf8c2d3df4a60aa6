"""The owner's side of the commands other processes send it (dashboard.wire.commands): run each
through its handler and answer.

The protocol (batches, deadlines, replies) is dashboard.wire.requests'; here only what the
owner makes of a command.
"""
import functools
import logging
import time
from typing import Callable

from django.conf import settings

from dashboard.wire.clients import redis_client
from dashboard.wire.commands import Command, CommandError, refusal
from dashboard.wire.keys import OWNER_COMMANDS, OWNER_REPLY_PREFIX
from dashboard.wire.requests import Reply, RequestServer

log = logging.getLogger(__name__)


class CommandServer:
    """Runs queued commands through `handlers` and answers them.

    handlers: op -> handler(args, actor); the return value (JSON-serializable) is
    the result; raising CommandError refuses with its status; anything else is a 500.
    With a `fence` (RedisFence) and the owner's `term`, replies go out only while that
    term is current: an owner frozen holding popped commands cannot, once another owner
    took its lease, tell their callers "done" for what the new leader never saw (they
    hear nothing: 503, as from no owner).
    """

    def __init__(self, handlers: dict[str, Callable[[dict, str], object]], client=None,
                 clock=time.time, fence=None, term: int | None = None):
        self.handlers = handlers
        self.requests = RequestServer(client or redis_client(settings.REDIS_URL),
                                      OWNER_REPLY_PREFIX, what="command",
                                      parse=Command.from_request, handle=self._handle,
                                      clock=clock,
                                      push=(functools.partial(fence.push_replies, term)
                                            if fence is not None else None))

    def serve(self, timeout: float, limit: int = 1000) -> int:
        """Wait up to `timeout` seconds for a command, then take up to `limit` queued ones
        without blocking, run and answer them; returns how many were taken off the list.
        Raises redis's ConnectionError or TimeoutError when Redis fails it; a command
        already taken off the list then still runs (unanswered)."""
        return self.requests.serve([OWNER_COMMANDS], timeout, limit)

    def _handle(self, queue, request, command: Command) -> Reply:
        try:
            return Reply.success(run_handler(self.handlers, command.op, command.args,
                                             command.actor, f"command {request.id}"))
        except CommandError as error:
            return refusal(error)


def run_handler(handlers: dict, op: str, args: dict, actor: str, what: str):
    """The result of `op`'s handler: its CommandError as raised, a 400 for an unknown op,
    a 500 (logged as `what`) for anything else it raised. Commands over Redis and the
    owner listener's calls are answered alike."""
    handler = handlers.get(op)
    if handler is None:
        raise CommandError(400, f"unknown op {op!r}")
    try:
        return handler(args, actor)
    except CommandError:
        raise
    except Exception as e:
        log.exception("%s (%s by %s) failed", what, op, actor)
        raise CommandError(500, f"{type(e).__name__}: {e}") from None
