"""The owner's command handlers for the extender: op -> handler(args, actor).

The HTTP views (next step) send the request body as the command's args, e.g.
`commands.send("extender_filter", body)`, and answer the result as the JSON
body (200), or 400 with the message of a refused command.

    owner.commands.handlers.update(command_handlers(extender))
"""
from dashboard.feed.commands import CommandError

from .core import Extender, ExtenderUserError
from .statuses import TransitionError

OPS = ("extender_filter", "extender_bind", "extender_preempt", "extender_status")


def _guarded(call):
    def handler(args, actor):
        try:
            return call(args)
        except ExtenderUserError as exc:
            raise CommandError(400, str(exc)) from None
        except TransitionError as exc:
            raise CommandError(409, str(exc)) from None
    return handler


def command_handlers(extender: Extender) -> dict:
    def status(args):
        uid = args.get("uid")
        if not isinstance(uid, str) or not uid:
            raise ExtenderUserError("extender_status needs a uid")
        return extender.status(uid)

    return {"extender_filter": _guarded(extender.filter),
            "extender_bind": _guarded(extender.bind),
            "extender_preempt": _guarded(extender.preempt),
            "extender_status": _guarded(status)}
