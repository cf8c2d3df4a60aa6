"""The owner's handlers for the extender: op -> handler(args, actor).

`verb_handlers`: kube-scheduler's verbs, which only the owner's own listener calls
(in-process, through OwnerCalls: a bind's plan is not JSON). `command_handlers`: what
other processes ask over Redis: the statuses page and REST read the statuses with
`extender_status` (one pod, by uid or by namespace and name) and `extender_statuses`
(a page, filtered by state).

    owner.register(command_handlers(extender))
"""
from .core import Extender
from .requests import ExtenderUserError, PodNotSeen
from .owner_calls import UnseenPod
from .statuses import TransitionError
from dashboard.wire.commands import CommandError
from dashboard.wire.extender import MAX_LIMIT, STATES

OPS = ("extender_status", "extender_statuses")


def _guarded(call, with_actor=False, waits_for_pod=False):
    """A handler(args, actor) of `call(args)`, or of `call(args, actor)` `with_actor` (a
    verb that changes the cache records its caller). `waits_for_pod`: a pod the watch has
    not shown is an UnseenPod, which OwnerCalls parks until it does."""
    def handler(args, actor):
        try:
            return call(args, actor) if with_actor else call(args)
        except PodNotSeen as exc:
            raise (UnseenPod(exc.uid, str(exc)) if waits_for_pod
                   else CommandError(400, str(exc))) from None
        except ExtenderUserError as exc:
            raise CommandError(400, str(exc)) from None
        except TransitionError as exc:
            raise CommandError(409, str(exc)) from None
    return handler


def _text(args, key) -> str:
    value = args.get(key)
    if not isinstance(value, str) or not value:
        raise ExtenderUserError(f"{key} must be a non-empty string")
    return value


def _count(args, key, default, most) -> int:
    value = args.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= most:
        raise ExtenderUserError(f"{key} must be an integer from 0 to {most}")
    return value


def command_handlers(extender: Extender) -> dict:
    statuses = extender.statuses

    def status(args):
        """{"uid"} or {"namespace", "name"} -> the pod's full status; 404 when untracked."""
        if "uid" in args:
            return extender.status(_text(args, "uid"))
        namespace, name = args.get("namespace"), _text(args, "name")
        if not isinstance(namespace, str):
            raise ExtenderUserError("namespace must be a string")
        found = statuses.find(namespace, name)
        if found is None:
            raise CommandError(404, f"the extender tracks no pod {namespace}/{name}")
        return found.as_dict()

    def page(args):
        """{"state"?, "offset"?, "limit"?} -> {"total", "counts", "items": summaries}."""
        state = args.get("state")
        if state is not None and state not in STATES:
            raise ExtenderUserError(f"state must be one of {', '.join(STATES)}")
        total, items = statuses.page(state, _count(args, "offset", 0, 10 ** 9),
                                     _count(args, "limit", 50, MAX_LIMIT))
        return {"total": total, "counts": statuses.counts(),
                "items": [s.summary() for s in items]}

    return {"extender_status": _guarded(status),
            "extender_statuses": _guarded(page)}


def verb_handlers(extender: Extender) -> dict:
    """kube-scheduler's verbs; `extender_bind_outcome` settles the Binding a bind planned.
    filter and preempt wait for a pod the watch has not shown yet (kube-scheduler's
    informer saw it first); a bind follows a filter, so its pod is one the watch showed."""
    def bind_outcome(args, actor):
        return extender.bind_outcome(args["uid"], args["node"], args["bound"], args["reason"],
                                     actor=actor)

    return {"extender_filter": _guarded(extender.filter, with_actor=True, waits_for_pod=True),
            "extender_bind": _guarded(extender.bind),
            "extender_bind_outcome": _guarded(bind_outcome, with_actor=True),
            "extender_preempt": _guarded(extender.preempt, waits_for_pod=True)}
