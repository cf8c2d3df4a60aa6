"""Commands to the cache owner: any process asks, the owner alone applies.

A command is a request (requests.py) on the list keys.OWNER_COMMANDS whose fields
are `{"op": "assume", "args": {...}, "actor": "alice"}`; its reply comes back on
keys.owner_reply(id). The owner refuses with CommandError's status (400, 404, 409),
fails with 500, or is not there to answer (503, OwnerUnavailable).
"""
from dataclasses import dataclass

from dashboard.wire.requests import MalformedMessage, Reply, Request, require_fields

_SHAPE = {"op": str, "args": dict, "actor": str}


class CommandError(Exception):
    """The owner refused a command (400, 404, 409) or failed on it (500), or is gone (503)."""

    def __init__(self, status: int, message: str):
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


class OwnerUnavailable(CommandError):
    """No reply before the timeout: no owner, a busy owner, or no Redis."""

    def __init__(self, message: str = "the cache owner did not answer in time"):
        super().__init__(503, message)


@dataclass(slots=True)
class Command:
    op: str
    args: dict
    actor: str    # who asked: a person's name, or the process ("bind", "reaper")

    def body(self) -> dict:
        return {"op": self.op, "args": self.args, "actor": self.actor}

    @classmethod
    def from_request(cls, request: Request) -> "Command":
        """The request's command; MalformedMessage when its fields are not a command's."""
        require_fields(request.body, _SHAPE)
        return cls(request.body["op"], request.body["args"], request.body["actor"])

    def __str__(self):
        return f"{self.op} by {self.actor}"


def answer(reply: Reply):
    """A reply's result, or the CommandError it carries (503: OwnerUnavailable)."""
    if reply.ok:
        return reply.result
    if reply.status == 503:
        raise OwnerUnavailable(reply.error)
    raise CommandError(reply.status, reply.error)


def refusal(error: CommandError) -> Reply:
    return Reply.refusal(error.status, error.message)


def malformed(error: MalformedMessage) -> CommandError:
    """What a caller makes of a reply it cannot read."""
    return CommandError(500, f"from the cache owner: {error}")
