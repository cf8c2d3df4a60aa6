"""When each assumed pod was assumed, oldest first: the owner's one record of it.

The read model's `assumed_at`, the status's stuck binds, the bind deadline, the
comparer's overdue binds and the bind-duration metric all read this record, so
they cannot disagree about when a pod was assumed.
"""
from dashboard.owner.pod_ref import pod_ref

_LEFT = frozenset(("pod_added", "pod_forgotten", "pod_expired", "pod_removed"))


class Assumptions:
    def __init__(self):
        self._entries = {}     # uid -> [when assumed, whether its bind went through]

    def note(self, kind: str, uid: str, at: float):
        """Follow one cache event. Returns the bind's duration in seconds when this event
        is the bind going through (its binding finished, or the watch seeing the pod
        bound, whichever came first), else None."""
        if kind == "pod_assumed":
            self._entries[uid] = [at, False]
        elif kind == "pod_binding_finished":
            return self._went_through(self._entries.get(uid), at)
        elif kind == "pod_confirmed":
            return self._went_through(self._entries.pop(uid, None), at)
        elif kind in _LEFT:
            self._entries.pop(uid, None)
        return None

    @staticmethod
    def _went_through(entry, at):
        if entry is None or entry[1]:
            return None
        entry[1] = True
        return max(0.0, at - entry[0])

    def when(self, uid: str):
        """When the pod was assumed; None if it is not assumed."""
        entry = self._entries.get(uid)
        return entry[0] if entry is not None else None

    def unfinished(self, cache, now: float, older_than: float) -> list:
        """(uid, node) of assumed pods whose binding has not finished, assumed more than
        `older_than` seconds before `now`, oldest first."""
        found = []
        for uid, (at, _) in self._entries.items():
            if now - at <= older_than:
                break
            status = cache.assumed_pod_status(pod_ref(uid))
            if status is not None and not status[0]:
                found.append((uid, cache.pod_info(uid).node_name))
        return found
