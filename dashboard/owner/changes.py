"""The doors: every change of the cache's assumptions goes through one of these.

Each door stamps the change with its cause and actor (their events carry them to
the history, the pages and the metrics), makes it (the cache emits its events)
and, where the owner acts on its own, writes the audit row with the flush. The
command handlers, the extender and the owner's loop call these; nothing else
assumes, finishes, forgets or expires a pod. (The feed's own changes, the watch's
and the lists', are applied by `apply.py`.)

A door that refuses (CacheError) has changed nothing.
"""
import logging

from dashboard.owner.journal import Journal, utc
from dashboard.owner.pod_ref import pod_ref

log = logging.getLogger(__name__)

BIND_DEADLINE_CAUSE = "bind deadline"
OWNER = "owner"              # the actor of what the owner does on its own


class CacheChanges:
    def __init__(self, cache, journal: Journal):
        self.cache = cache
        self.journal = journal

    def assume(self, placed: dict, cause: str, actor: str):
        """A pod (its Mapping, spec.nodeName set) is assumed on its node."""
        self.journal.stamp(cause, actor)
        self.cache.assume_pod(placed)

    def finish_binding(self, uid: str, cause: str, actor: str, now=None) -> bool:
        """The pod's Binding was made: its expiry clock starts. Returns whether it was
        assumed (a pod that is not is left alone)."""
        assumed = self.cache.is_assumed_pod(pod_ref(uid))
        self.journal.stamp(cause, actor)
        self.cache.finish_binding(pod_ref(uid), now=now)
        return assumed

    def forget(self, uid: str, node: str, cause: str, actor: str, audit: str = "",
               why: str = ""):
        """The assumption of the pod on `node` is dropped (its bind failed, or it was
        abandoned); `why` (a failed bind's API server answer) stays on the transition;
        with `audit`, the owner's own act is audited with that message (and it is why)."""
        info = self.cache.pod_info(uid)
        self.journal.stamp(cause, actor, why or audit)
        self.cache.forget_pod(pod_ref(uid, node))
        if audit:
            self._audit("forget", uid, node, audit, info, cause, actor)

    def expire(self, uid: str, cause: str, actor: str, now=None):
        """The assumed pod expires now, whatever its deadline (an operator's "expire now")."""
        self.journal.stamp(cause, actor)
        self.cache.expire_pod(pod_ref(uid), now=now)

    def reap(self, cause: str, actor: str, now=None) -> list:
        """Every assumed pod whose binding finished and whose deadline passed expires;
        returns their uids."""
        self.journal.stamp(cause, actor)
        return self.cache.cleanup_assumed_pods(now=now)

    def forget_overdue_binds(self, now: float, deadline: float) -> int:
        """Every assumed pod whose binding has not finished `deadline` seconds after it was
        assumed is forgotten, so no placement holds its node for ever; each is audited.
        Returns how many."""
        overdue = self.journal.assumptions.unfinished(self.cache, now, deadline)
        for uid, node in overdue:
            info = self.cache.pod_info(uid)
            log.warning("pod %s/%s (%s) assumed on %s has not been bound within %g s: "
                        "forgetting it", info.namespace, info.name, uid, node, deadline)
            self.forget(uid, node, BIND_DEADLINE_CAUSE, OWNER,
                        audit=f"not bound within the bind deadline of {deadline:g} s")
        return len(overdue)

    def _audit(self, action, uid, node, message, info, cause, actor):
        self.journal.audit(
            {"at": utc(self.journal.clock()),
             "actor": actor, "action": action, "target": uid, "node": node, "ok": True,
             "message": message,
             "details": {"namespace": info.namespace, "name": info.name, "cause": cause}})
