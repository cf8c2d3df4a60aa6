"""The scheduler extender's core: kube-scheduler's filter, bind and preempt, in the cache owner.

Takes and returns the extender API's JSON (k8s.io/kube-scheduler/extender/v1 types.go),
read and built by requests.py.

Errors, as in HiveD: a malformed request, or a pod the owner's watch has never
shown (a pod named in a call must be a pod of the cluster: nothing else is assumed or
tracked), raises ExtenderUserError; the HTTP layer answers 400 with its message. An
unseen pod raises PodNotSeen: kube-scheduler's informer often sees a new pod before the
owner's watch does, so the owner parks a filter or preempt naming one until the watch
shows it (owner_calls.py) and refuses it only if it never does. A
platform failure (the algorithm or the cache raising) is logged and answered inside the
result's "Error", which is what kube-scheduler reads. A refused request changes nothing:
everything is validated before the cache or the statuses are touched.

filter, per the pod's status:

- Unknown / Waiting / Preempting: ask the algorithm over the candidate nodes.
  bind -> Binding; the pod is assumed in the cache on the node; the result
  lists only that node, and no failed nodes: kube-scheduler reads those only
  when no node is left (to explain, and to pick where to preempt), and a
  listing of 5,000 refusals costs more than the decision. When the node is not
  a candidate, nothing is listed and every candidate is FailedAndUnresolvable
  (preemption cannot change a decided placement).
  preempt -> Preempting; every candidate fails, the victims' nodes in
  FailedNodes (resolvable: kube-scheduler then runs its preemption and calls
  `preempt`, which answers our victims), the others FailedAndUnresolvable.
  A feasible node in the result would make kube-scheduler bind there at once,
  without preempting anything, so the victims' nodes are never listed as
  feasible.
  wait -> Waiting; every candidate in FailedNodes with its reason (what
  `kubectl describe pod` shows).
- Binding: one more bind attempt (PodBindAttempts). The decided node is
  listed again. At `force_bind_after` attempts, or at once when kube-scheduler
  no longer suggests the node (it will never bind it there), the extender
  binds the pod itself through `schedule_bind`. When the node has left the
  cache the placement is void: the assumption is forgotten, the status dropped
  (-> Unknown) and the pod scheduled afresh.
- Bound: the node is listed again (the watch has not told kube-scheduler yet).

bind is real before it is answered (shared k8s-wire/extender 07-bind-noop: a success
answer without a Binding leaves the pod unbound and never retried). `bind` checks the
call against the pod's placement and returns a BindPlan; whoever serves the call posts
the Binding outside the owner's thread (dashboard.kube.binding) and hands the outcome to
`bind_outcome`: bound -> the binding finished, answered `{}`; refused -> the assumption
is forgotten and the API server's reason answered in "Error", so kube-scheduler forgets
its own and retries from filter with backoff (05a, 05b).

preempt answers for any pod of the cluster, filtered before or not: kube-scheduler
calls it directly when its own filters left no node (03a-03g). The algorithm picks the
node and the victims among the nodes sent, in either shape (NodeNameToMetaVictims or
NodeNameToVictims); the answer names only that node (kube-scheduler preempts where it is
told: 03c), or no node when preemption cannot help, the reasons then logged and kept as
the pod's Waiting status.

The pod decided on is the pod as the owner's watch shows it, never the request's: the
body only names it (uid, namespace, name), so a body with a real pod's uid and its
nodeSelector, tolerations or requests changed places nothing against the pod's own
constraints (issue 22, item 8).

The extender changes the cache only through the owner's doors (`changes`, a
dashboard.owner.changes.CacheChanges): its assumptions, the bind outcomes and the
forgetting of a refused or void placement are stamped with the cause "extender" and
the caller (kube-scheduler, as the listener names it), and a restored placement
with the cause "relist".

The owner calls `on_cache_event` for every cache event (or `confirmed`,
`released` itself): a confirmed pod becomes Bound; a forgotten, expired or
removed pod's status is dropped, so its next filter schedules it again.

One thread: the owner's. The statuses and the algorithm have their own locks,
but the cache calls `on_cache_event` under its lock, so call the extender
from the thread that applies the cache's changes.
"""
import logging
from typing import Callable, Optional

from schedcache.errors import CacheError

from .statuses import (
    ALLOCATED,
    BINDING,
    BOUND,
    PREEMPTING,
    UNKNOWN,
    PodScheduleStatuses,
    TransitionError,
    Victim,
    reason_counts,
)
from .requests import (
    API_SERVER_UID,
    ExtenderUserError,
    LastNodeNames,
    PodNotSeen,
    candidates_of,
    field,
    json_object,
    pod_identity,
    preemption_nodes,
    binding_result,
    filter_result,
    preemption_result,
)
from dashboard.owner.changes import CacheChanges
from dashboard.owner.pod_ref import pod_ref

log = logging.getLogger(__name__)

FORCE_BIND_AFTER = 3
ACTOR = "kube-scheduler"       # who calls the verbs, unless the listener names the caller
CAUSE = "extender"             # the cause of the changes the verbs make

NO_REASON = "the scheduler algorithm found no room for the pod on this node"
class BindPlan:
    """What a bind call asks for: `answer` at once, or a Binding of `pod` = (uid,
    namespace, name, node) posted first and its outcome handed to `Extender.bind_outcome`."""

    __slots__ = ("answer", "pod")

    def __init__(self, answer=None, pod=None):
        self.answer, self.pod = answer, pod


def _placed(pod, node) -> dict:
    return dict(pod, spec=dict(pod.get("spec") or {}, nodeName=node))


class Extender:
    """filter / bind / preempt over one cache, one algorithm and the statuses.

    schedule_bind(uid, namespace, name, node): queue the Binding of a pod the extender
    binds on its own, with nobody waiting (the owner passes a BindSender, which
    publishes to the Celery batched bind path from its own thread); it must not block.
    watched_pod(uid) -> the pod Mapping as the owner's watch shows it (pending or
    cached), or None: what the extender decides on, whatever the request's body says. `changes`: the owner's doors, the extender's only way to change
    the cache (it reads `cache`).
    """

    def __init__(self, cache, algorithm, statuses: PodScheduleStatuses,
                 schedule_bind: Callable[[str, str, str, str], object], *,
                 watched_pod: Callable[[str], Optional[dict]], changes: CacheChanges,
                 force_bind_after: int = FORCE_BIND_AFTER):
        if force_bind_after < 1:
            raise ValueError("force_bind_after must be at least 1")
        self.cache = cache
        self.changes = changes
        self.algorithm = algorithm
        self.statuses = statuses
        self.schedule_bind = schedule_bind
        self.watched_pod = watched_pod
        self.force_bind_after = force_bind_after
        self._released = []   # placed pods to hand to algorithm.delete_allocated_pod
        self._last_names = LastNodeNames()
        self.stats = {"filter": 0, "bind": 0, "preempt": 0, "forced_binds": 0,
                      "platform_errors": 0, "binds_refused": 0}

    # --- filter -----------------------------------------------------------------------------
    def filter(self, args: dict, actor: str = ACTOR) -> dict:
        """ExtenderArgs -> ExtenderFilterResult. Raises ExtenderUserError for a bad request.
        `actor`: the caller, recorded with the changes the call makes."""
        _, uid, namespace, name = pod_identity(args, "filter")
        candidates = candidates_of(args, self._last_names)
        pod = self._watched(uid, namespace, name)
        self.stats["filter"] += 1
        self._flush_released()
        try:
            return self._filter(pod, uid, namespace, name, candidates, actor)
        except Exception as exc:   # a platform error: kube-scheduler reads it in Error
            self.stats["platform_errors"] += 1
            log.exception("extender filter of pod %s/%s (%s) failed", namespace, name, uid)
            return filter_result(None, error=f"schedview extender: filter of pod "
                                             f"{namespace}/{name} failed: "
                                             f"{type(exc).__name__}: {exc}")

    def _filter(self, pod, uid, namespace, name, candidates, actor):
        status = self.statuses.get(uid)
        if status is not None and status.state == BOUND:
            return self._placed_result(candidates, status.node, "bound")
        if status is not None and status.state == BINDING:
            if self._node_exists(status.node):
                return self._filter_binding(status, candidates)
            log.warning("pod %s/%s (%s) was placed on node %s, which left the cache: "
                        "scheduling it again", namespace, name, uid, status.node)
            self._void_placement(status, actor)
        if status is None and self.cache.pod_info(uid) is not None:
            if self.cache.is_assumed_pod(pod_ref(uid)):
                return self._adopt(uid, namespace, name, candidates)
            # bound, as the watch showed: kube-scheduler's own view lags behind
            return self._placed_result(candidates, self.cache.pod_info(uid).node_name, "bound")
        result = self.algorithm.schedule(pod, candidates.name_set)
        kind = result.kind
        if kind == "bind":
            return self._filter_bind(pod, uid, namespace, name, result.bind_info.node,
                                     candidates, actor)
        if kind == "preempt":
            return self._filter_preempt(uid, namespace, name, result.preempt_info, candidates)
        reasons = dict(result.wait_info.failed_node_reasons) if result.wait_info else {}
        failed = {n: reasons.get(n) or NO_REASON for n in candidates.names}
        self._enter(uid, namespace, name)
        self.statuses.wait(uid, namespace, name, failed)
        return filter_result(candidates, (), failed)

    def _enter(self, uid, namespace, name):
        """Unknown -> Waiting: a pod enters the statuses Waiting, as HiveD's informer does."""
        if self.statuses.state(uid) == UNKNOWN:
            self.statuses.wait(uid, namespace, name, {})

    def _filter_bind(self, pod, uid, namespace, name, node, candidates, actor):
        if self.statuses.state(uid) != UNKNOWN:
            self.statuses.check(uid, BINDING)   # before the cache is touched
        placed = _placed(pod, node)
        # CacheError -> platform error, nothing changed
        self.changes.assume(placed, CAUSE, actor)
        self.algorithm.add_allocated_pod(placed)
        self._enter(uid, namespace, name)
        status = self.statuses.binding(uid, namespace, name, node=node, pod=placed)
        if node not in candidates.name_set:
            # kube-scheduler cannot bind where it did not suggest: bind it ourselves.
            self._send_bind(status, "the algorithm placed it on a node kube-scheduler did "
                                    "not suggest")
        return self._placed_result(candidates, node, "placed")

    def _filter_binding(self, status, candidates):
        attempts = self.statuses.count_bind_attempt(status.uid)
        suggested = status.node in candidates.name_set
        if not status.bind_requested:
            if not suggested:
                self._send_bind(status, f"kube-scheduler no longer suggests node {status.node}")
            elif attempts >= self.force_bind_after:
                self._send_bind(status, f"{attempts} filter calls without a bind")
        return self._placed_result(candidates, status.node, "placed")

    def _adopt(self, uid, namespace, name, candidates):
        """A pod assumed in the cache by someone else (an operator, a tool, a restored
        placement) keeps that placement: it is Binding there, and kube-scheduler's bind
        posts the Binding (a 409 from one already posted reads back as bound)."""
        info = self.cache.pod_info(uid)
        node = info.node_name
        self.statuses.wait(uid, namespace, name, {})
        self.statuses.binding(uid, namespace, name, node=node, pod=_placed(info.pod, node))
        return self._placed_result(candidates, node, "assumed")

    def _placed_result(self, candidates, node, how):
        listed = [node] if node in candidates.name_set else []
        if listed:
            return filter_result(candidates, listed)
        reason = (f"the pod is {how} on node {node}, which is not a candidate; "
                  f"the extender binds it there itself")
        return filter_result(candidates, (), {}, dict.fromkeys(candidates.names, reason))

    def _filter_preempt(self, uid, namespace, name, info, candidates):
        victims = {}
        for node, pods in info.victims.items():
            victims[node] = tuple(Victim(p.key, p.namespace, p.name, p.priority) for p in pods)
        self._enter(uid, namespace, name)
        self.statuses.preempt(uid, namespace, name, node=info.node, victims=victims)
        failed, unresolvable = {}, {}
        for node in candidates.names:
            if node in victims:
                count = len(victims[node])
                failed[node] = (f"preempting {count} lower-priority pod(s) on this node makes "
                                f"room for the pod")
            else:
                unresolvable[node] = (f"the pod waits for the preemption of its victims on "
                                      f"node {info.node}")
        return filter_result(candidates, (), failed, unresolvable)

    # --- bind -------------------------------------------------------------------------------
    def bind(self, args: dict) -> BindPlan:
        """ExtenderBindingArgs -> BindPlan. Raises ExtenderUserError."""
        json_object(args, "the bind request body")
        values = {}
        for key in ("PodName", "PodNamespace", "PodUID", "Node"):
            value = field(args, key)
            if not isinstance(value, str) or (not value and key != "PodNamespace"):
                raise ExtenderUserError(f"the bind request's {key} must be a non-empty string")
            values[key] = value
        uid, node = values["PodUID"], values["Node"]
        namespace, name = values["PodNamespace"], values["PodName"]
        self._watched(uid, namespace, name)
        label = f"{namespace}/{name} ({uid})"
        status = self.statuses.get(uid)
        if status is None:
            raise ExtenderUserError(f"pod {label} was not placed by the extender (never "
                                    f"filtered, or forgotten since): filter it first")
        self.stats["bind"] += 1
        if status.state not in (BINDING, BOUND):
            return BindPlan(binding_result(f"pod {label} is {status.state}: the extender has "
                                           f"not placed it, so it cannot be bound"))
        if status.node != node:
            return BindPlan(binding_result(f"pod {label} is placed on node {status.node}, not "
                                           f"{node}: refusing to bind it to {node}"))
        if status.state == BOUND:
            return BindPlan(binding_result())     # a repeat: the Binding exists
        self.statuses.count_bind_attempt(uid)
        if self._binding_finished(uid):
            return BindPlan(binding_result())     # bound by the extender's own bind
        return BindPlan(pod=(uid, status.namespace, status.name, node))

    def bind_outcome(self, uid: str, node: str, bound: bool, reason: str = "",
                     now: float = None, actor: str = ACTOR) -> dict:
        """The Binding `bind` planned was posted: settle the cache -> ExtenderBindingResult."""
        assumed_here = (self.cache.is_assumed_pod(pod_ref(uid))
                        and self.cache.pod_info(uid).node_name == node)
        if bound:
            if assumed_here:
                self.changes.finish_binding(uid, CAUSE, actor, now=now)
            return binding_result()
        self.stats["binds_refused"] += 1
        status = self.statuses.get(uid)
        label = f"{status.namespace}/{status.name} ({uid})" if status else uid
        log.warning("binding pod %s to node %s failed: %s; the extender forgets it",
                    label, node, reason)
        if assumed_here:   # emits pod_forgotten -> released; the reason on its transition
            self.changes.forget(uid, node, CAUSE, actor, why=reason)
        else:
            self.released(uid)
        return binding_result(f"schedview extender: binding pod {label} to node {node} "
                              f"failed: {reason}")

    def _binding_finished(self, uid) -> bool:
        status = self.cache.assumed_pod_status(pod_ref(uid))
        return bool(status and status[0])

    def _send_bind(self, status, why):
        """Bind the pod's placement ourselves, once, through schedule_bind (nobody waits for
        it); a failure to queue it is logged: the next filter call tries again."""
        try:
            self.schedule_bind(status.uid, status.namespace, status.name, status.node)
        except Exception:
            log.exception("the extender could not queue the bind of pod %s/%s on %s (%s)",
                          status.namespace, status.name, status.node, why)
            return
        self.stats["forced_binds"] += 1
        log.info("the extender binds pod %s/%s on %s itself: %s", status.namespace,
                 status.name, status.node, why)
        self.statuses.mark_bind_requested(status.uid)

    # --- preempt ----------------------------------------------------------------------------
    def preempt(self, args: dict) -> dict:
        """ExtenderPreemptionArgs -> ExtenderPreemptionResult: victims on the node chosen
        among those sent (as MetaPods), or no node when preemption cannot help."""
        _, uid, namespace, name = pod_identity(args, "preempt")
        nodes = preemption_nodes(args)
        pod = self._watched(uid, namespace, name)
        self.stats["preempt"] += 1
        self._flush_released()
        label = f"{namespace}/{name} ({uid})"
        status = self.statuses.get(uid)
        if status is not None and status.state in ALLOCATED:
            log.info("preemption for pod %s refused: it is already %s on node %s", label,
                     status.state, status.node)
            return preemption_result({})
        if status is not None and status.state == PREEMPTING and status.node in nodes:
            alive = tuple(v for v in status.victims.get(status.node, ())
                          if self._on_node(v.uid, status.node))
            if alive:   # victims already gone must leave the answer, or it is refused
                return preemption_result({status.node: alive})
        try:
            result = self.algorithm.schedule(pod, nodes)
        except Exception:
            self.stats["platform_errors"] += 1
            log.exception("extender preemption for pod %s failed", label)
            raise
        if result.kind == "preempt":
            info = result.preempt_info
            victims = tuple(Victim(p.key, p.namespace, p.name, p.priority)
                            for p in info.victims[info.node])
            self._enter(uid, namespace, name)
            self.statuses.preempt(uid, namespace, name, node=info.node,
                                  victims={info.node: victims})
            log.info("pod %s preempts %d pod(s) on node %s", label, len(victims), info.node)
            return preemption_result({info.node: victims})
        if result.kind == "bind":
            reasons = {result.bind_info.node: "the pod fits on this node without preemption"}
        else:
            found = dict(result.wait_info.failed_node_reasons) if result.wait_info else {}
            reasons = {n: f"preemption cannot help: {found.get(n) or NO_REASON}"
                       for n in nodes}
        log.info("no preemption for pod %s on %d node(s): %s", label, len(nodes),
                 reason_counts(reasons))
        # A pod its filter left Waiting keeps the filter's reasons (why it waits); one never
        # filtered, or whose preemption is over, waits for these.
        if self.statuses.state(uid) in (UNKNOWN, PREEMPTING):
            self._enter(uid, namespace, name)
            self.statuses.wait(uid, namespace, name, reasons)
        return preemption_result({})

    # --- what the owner tells the extender ---------------------------------------------------
    def on_cache_event(self, event) -> None:
        """Subscribe this to the cache (cache.subscribe): keeps the statuses in step."""
        kind = event.kind
        if kind in ("pod_confirmed", "pod_added"):
            self.confirmed(event.key, event.node)
        elif kind in ("pod_forgotten", "pod_expired", "pod_removed"):
            self.released(event.key)

    def confirmed(self, uid: str, node: str = "") -> bool:
        """The watch saw the pod bound (on `node`): Binding -> Bound. Returns whether it moved.

        A Waiting/Preempting pod bound by someone else becomes Bound on its node
        (via Unknown, as HiveD allows); an untracked pod stays untracked.
        """
        status = self.statuses.get(uid)
        if status is None or status.state == BOUND:
            return False
        if status.state == BINDING and (not node or node == status.node):
            self.statuses.bound(uid)
            return True
        if status.state == BINDING:
            log.error("pod %s/%s (%s) was placed on %s but was bound to %s", status.namespace,
                      status.name, uid, status.node, node)
            self._released.append(status.pod)
        self.statuses.remove(uid)
        self.statuses.bound(uid, status.namespace, status.name, node=node or status.node)
        return True

    def released(self, uid: str) -> bool:
        """The pod left the cache or its assumption did (deleted, bind failed, expired):
        drop its status (-> Unknown), so its next filter schedules it afresh."""
        status = self.statuses.remove(uid)
        if status is None:
            return False
        if status.state == BINDING and status.pod is not None:
            self._released.append(status.pod)
        return True

    def restore(self, pods) -> dict:
        """After a restart: rebuild the statuses from the pods' bind-info annotations and
        assume every Binding pod in the cache again. Returns the state counts."""
        counts = self.statuses.rebuild(pods)
        for uid, status in list(self.statuses.dump().items()):
            if status["state"] != BINDING:
                continue
            placed = self.statuses.get(uid).pod
            if self.cache.pod_state(pod_ref(uid)) is None:
                try:
                    # restored when a pod list ends: recorded as the relist's
                    self.changes.assume(placed, "relist", "")
                except CacheError as exc:
                    log.warning("could not assume restored pod %s: %s", uid, exc)
            self.algorithm.add_allocated_pod(placed)
        return counts

    def status(self, uid: str) -> dict:
        status = self.statuses.get(uid)
        return status.as_dict() if status is not None else {"uid": uid, "state": UNKNOWN}

    # --- helpers ----------------------------------------------------------------------------
    def _watched(self, uid, namespace, name) -> dict:
        """The pod as the owner's watch shows it, which must carry the name the call gives;
        PodNotSeen when the watch has not shown the uid."""
        pod = self.watched_pod(uid)
        if pod is None:
            unseen = (f"pod {namespace}/{name} ({uid}) is not a pod the cache owner has seen "
                      f"from the API server")
            if API_SERVER_UID.fullmatch(uid):
                raise PodNotSeen(uid, unseen)
            raise ExtenderUserError(f"{unseen}, and never will be: its uid is not a UUID, "
                                    f"the only form the API server gives")
        meta = pod["metadata"]
        known = (meta.get("namespace") or "", meta.get("name") or "")
        if known != (namespace, name):
            raise ExtenderUserError(f"pod {uid} is {known[0]}/{known[1]} in the cluster, "
                                    f"not {namespace}/{name}")
        return pod

    def _node_exists(self, name) -> bool:
        info = self.cache.node_info(name)
        return info is not None and info.has_node

    def _on_node(self, uid, node) -> bool:
        info = self.cache.pod_info(uid)
        return info is not None and info.node_name == node

    def _void_placement(self, status, actor):
        if self.cache.is_assumed_pod(pod_ref(status.uid)):
            self.changes.forget(status.uid, status.node, CAUSE, actor)   # emits pod_forgotten
        self.released(status.uid)

    def _flush_released(self):
        released, self._released = self._released, []
        for pod in released:
            if pod is None:
                continue
            try:
                self.algorithm.delete_allocated_pod(pod)
            except Exception:
                log.exception("algorithm.delete_allocated_pod failed")


__all__ = ["ACTOR", "BindPlan", "Extender", "FORCE_BIND_AFTER", "TransitionError"]
