"""kube-scheduler's stand-in: the embedded default schedules through the extender.

The simulated cluster has no kube-scheduler, so `manage.py up` runs `manage.py standin`,
a period of this every SCHEDVIEW_SCHEDULE_PERIOD (runner.py). It calls the owner's extender on its listener exactly as a kube-scheduler v1.36 configured
with it does (nodeCacheCapable; verbs filter, bind and preempt; no prioritize), as the
captures in ../shared/k8s-wire/extender/ show (scenario names below are theirs):

One attempt per due pod (`standin_queue.py` says which, in which order, and when a pod
that failed comes back):

0. a pod naming a PersistentVolumeClaim that does not exist is refused before any node is
   tried, as VolumeBinding's PreFilter refuses it, in kube-scheduler's words (the
   why-pending capture's missing-pvc: no preemption part); unchecked until the view has
   listed the claims, and while the API server forbids them;
1. its own filter plugins first, on its own view of the cluster (`standin_view.py`:
   resources with extended ones, node name, selector and affinity, taints,
   unschedulable, host ports, by the `scheduling` library's predicates; extended
   resources it is told to ignore are left to the extender, as kube-scheduler's
   NodeResourcesFitArgs.ignoredResources leaves them: 08 gpu-9), over the
   nodes in zone-interleaved order from where the last attempt stopped, until
   kube-scheduler's number of feasible nodes is found (every node below 100 nodes). A
   pod nominated to a node that passes is tried on that node alone (03a: after a
   preemption, `filter` gets only the nominated node);
2. `filter` with only the nodes that passed (01), in that order. A node kept: the pod is
   assumed there and `bind` sent; `{}` or an empty Error is success (01), anything else
   (an Error, a non-200, a timeout, a refused connection) a failed attempt: the
   assumption is forgotten and the pod backs off (05a-05g). An Error, a non-200 or a
   kept node it was not sent is an error too (06a, 02 rej-4); no node kept is
   unschedulable (02 rej-2, rej-3);
3. no node passing its own filters: kube-scheduler's preemption (DefaultPreemption).
   Not while a lower-priority victim of the pod's earlier preemption is still
   terminating on its nominated node (03a: "not eligible due to a terminating pod on the
   nominated node"). Candidates: nodes refused only for resources or ports where
   evicting lower-priority pods makes room, each with its own minimal victims
   (`scheduling.preemption.select_victims`); none: no `preempt` call (02 rej-2, 07
   noop-2). Otherwise `preempt` gets them as NodeNameToMetaVictims (03a); from the
   nodes it answers (it may drop some, 03c, or victims, 03b) one is picked by
   kube-scheduler's rule (fewest PDB violations, lowest highest victim priority, lowest
   priority sum, fewest victims, latest start of the highest-priority victims, then
   the first); the pod's status.nominatedNodeName is written, the victims marked
   DisruptionTarget and deleted gracefully (uid precondition), and the pod waits for
   their deletions (03a). An empty answer, a node without victims or a victim not on
   its node: no preemption (03d, 03e, 03g); a non-200: unschedulable (04a, 04b).
   Every failure writes the pod's PodScheduled=False condition (Unschedulable or
   SchedulerError, with kube-scheduler's message) when it changed.

A 400 from the extender means it refused the pod (one its watch did not show within
SCHEDVIEW_EXTENDER_UNSEEN_WAIT, or a malformed call): that attempt is an error, and the
pod backs off. Left out:
PodDisruptionBudgets, nominated pods' room on their node for other pods, scoring (the
first node the extender keeps is bound), kube-scheduler's inter-pod affinity and
volume plugins beyond a claim's existence (the `scheduling` library's predicates are
the filter plugins here).
Different: attempts run one after the other, binds included, where kube-scheduler binds
in the background; a slow bind delays the period's later pods (never fails them).

The door: the owner's listener at SCHEDVIEW_EXTENDER_ADDRESS over one kept-alive
connection, as kube-scheduler keeps its connections (the extender README: "One
keep-alive connection is reused for every verb and pod").
"""
import http.client
import logging
import time
from collections import Counter
from datetime import datetime, timezone

import orjson
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from schedcache import CacheError
from scheduling import predicates, preemption
from scheduling.diagnosis import (
    NEVER,
    NO_CLAIMS,
    NO_VICTIMS,
    NOT_HELPFUL,
    UNTOLERATED_TAINTS,
    Diagnoser,
    missing_claim,
    summary,
)
from scheduling.podview import PodView

from .standin_queue import SchedulingQueue, timestamp_text
from .standin_view import SCHEDULER_NAME, ClusterView
from dashboard.wire.extender import PREFIX, parse_address

log = logging.getLogger(__name__)

KUBE_TIMEOUT = 10.0      # seconds for one Kubernetes API request
FIRST_SYNC = 10.0        # seconds a new worker waits for its first lists
OUTCOMES = ("bind", "wait", "preempt", "error", "victims")
# kube-scheduler's numFeasibleNodesToFind and DefaultPreemption's candidate count.
MIN_FEASIBLE_NODES = 100
MIN_CANDIDATE_NODES = 100
CANDIDATE_PERCENT = 10
MAX_PRIORITY_SHIFT = 2 ** 31     # victims' priorities are summed shifted positive
PREEMPTED_MESSAGE = f"{SCHEDULER_NAME}: preempting to accommodate a higher priority pod"
NO_CANDIDATE = "no candidate node for preemption"    # 03d: preempt answered no node


class CallFailed(Exception):
    """An extender call that is no answer: transport error, timeout, non-200, no JSON."""


class Refused(CallFailed):
    """The extender answered 400: it refused the pod."""


# --- the door to the owner's extender ----------------------------------------------------------

class HttpDoor:
    """The owner's listener over one kept-alive HTTP/1.1 connection (http.client, as the
    extender bench calls it: urllib3's pool costs twice the CPU)."""

    def __init__(self, address: str, timeout: float):
        self.host, self.port = parse_address(address)
        self.timeout = timeout
        self._connection = None

    def call(self, verb: str, body: dict) -> dict:
        while True:
            fresh = self._connection is None
            try:
                status, raw = self._post(verb, body)
                break
            except (OSError, http.client.HTTPException) as exc:
                self.close()
                # A kept-alive connection the listener had closed: once more on a new one,
                # as Go's client retries on a reused connection.
                if fresh or not isinstance(exc, (ConnectionResetError, BrokenPipeError,
                                                 http.client.RemoteDisconnected)):
                    raise CallFailed(f"{verb} at {self.host}:{self.port}: "
                                     f"{type(exc).__name__}: {exc}") from None
        try:
            answer = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise CallFailed(f"{verb} answered {status} with no JSON") from None
        error = answer.get("Error", "") if isinstance(answer, dict) else ""
        if status == 400:
            raise Refused(f"{verb} answered 400: {error}")
        if status != 200 or not isinstance(answer, (dict, list)):
            raise CallFailed(f"failed {verb} with extender, code {status}: {error}")
        return answer

    def _post(self, verb, body):
        if self._connection is None:
            self._connection = http.client.HTTPConnection(self.host, self.port,
                                                          timeout=self.timeout)
        self._connection.request("POST", PREFIX + verb, body=orjson.dumps(body),
                                 headers={"Content-Type": "application/json"})
        response = self._connection.getresponse()
        raw = response.read()
        if response.will_close:
            self.close()
        return response.status, raw

    def close(self):
        if self._connection is not None:
            self._connection.close()
            self._connection = None


def field(answer, name):
    """An answer's field, its name matched case-insensitively as kube-scheduler reads it
    (01: `nodenames`, `host`/`score` accepted)."""
    if not isinstance(answer, dict):
        return None
    if name in answer:
        return answer[name]
    lowered = name.lower()
    return next((v for k, v in answer.items() if k.lower() == lowered), None)


# --- small parts ---------------------------------------------------------------------------

def _meta(pod):
    return pod["metadata"]


def _name(pod) -> str:
    return f"{_meta(pod).get('namespace')}/{_meta(pod)['name']}"


def feasible_to_find(nodes: int) -> int:
    """kube-scheduler's numFeasibleNodesToFind with the default percentageOfNodesToScore."""
    if nodes < MIN_FEASIBLE_NODES:
        return nodes
    percent = max(50 - nodes // 125, 5)
    return max(nodes * percent // 100, MIN_FEASIBLE_NODES)


def fit_message(total: int, reasons: dict, preemption: str = "", failed: bool = False) -> str:
    """kube-scheduler v1.36.2's FitError text, in the diagnosis's words (scheduling.diagnosis
    builds the filters' part for both): "0/5 nodes are available: 5 Insufficient cpu.";
    then, after a preemption that came to a verdict, DynamicResources' word before it
    ("no new claims to deallocate, preemption: ...": why-pending/cases.json, extender 03a,
    03d), while a preemption that `failed` (the extender's error: 03e, 03g, 04a, 04b) says
    its error alone. `reasons`: node -> its refusal, several joined by ", "."""
    counts = Counter()
    for reason in reasons.values():
        counts.update(reason.split(", "))
    text = summary(total, counts)
    if not preemption:
        return text
    return f"{text} preemption: {preemption}" if failed else \
        f"{text} {NO_CLAIMS}, preemption: {preemption}"


class Outcome(Exception):
    """Ends one attempt: `kind` is an OUTCOMES name; `victims`, the pods deleted;
    `answered`: an error the extender answered, which the owner has logged already."""

    def __init__(self, kind: str, message: str = "", victims: int = 0, answered: bool = False):
        super().__init__(message)
        self.kind, self.message, self.victims = kind, message, victims
        self.answered = answered


# --- the scheduler ---------------------------------------------------------------------------

class StandIn:
    """The process's kube-scheduler: `period()` attempts the due pods. `api` writes
    (status, deletes) to the cluster that `view` reflects; `door` calls the extender."""

    def __init__(self, api, door, view: ClusterView, queue: SchedulingQueue | None = None,
                 ignored_resources: frozenset = frozenset()):
        self.api, self.door, self.view = api, door, view
        self.queue = queue if queue is not None else SchedulingQueue()
        # Extended resources its fit filter (and so its preemption) leaves to the extender,
        # as NodeResourcesFitArgs.ignoredResources or an extender's managedResources with
        # ignoredByScheduler do: such a pod is sent to `filter` all the same (08 gpu-9).
        self.ignored_resources = ignored_resources
        self.next_start = 0      # kube-scheduler's nextStartNodeIndex
        # Its words for a pod no node takes and no eviction helps: the owner's diagnosis's,
        # over this view's cache (see _no_candidates).
        self.diagnoser = Diagnoser(view.cache)

    def close(self) -> None:
        """Stop the view's watches and close the connection."""
        self.view.stop()
        self.door.close()

    def period(self, limit: int = 20, now: float | None = None,
               first_sync: float = 0.0) -> dict:
        """Up to `limit` due pods through the extender; the outcomes' counts."""
        counts = dict.fromkeys(OUTCOMES, 0)
        if not self.view.sync(first_sync):
            log.info("waiting for the first lists of nodes, pods and claims")
            return counts
        now = time.time() if now is None else now
        view = self.view
        self.diagnoser.claims = view.claims if view.claims.known else None
        pending = [p for p in view.pending.values()
                   if p.scheduler == SCHEDULER_NAME and not p.facts.deleting]
        errors, answered = [], []
        for due in self.queue.due(pending, view.changes, now, limit):
            pod = due.thaw()
            try:
                self._attempt(pod, now)
            except Outcome as outcome:
                counts[outcome.kind] += 1
                counts["victims"] += outcome.victims
                if outcome.kind == "error":
                    (answered if outcome.answered else errors).append(
                        f"{_name(pod)}: {outcome.message}")
        if errors:
            # One line a period, however many failed: the first few say why.
            log.warning("%d pod(s) failed an attempt and back off: %s%s", len(errors),
                        "; ".join(errors[:3]), "; ..." if len(errors) > 3 else "")
        if answered:
            # The extender refused them and the owner's log said why, once: not again here.
            log.debug("%d pod(s) refused by the extender back off", len(answered))
        return counts

    # --- one attempt: filters, then bind or preempt ------------------------------------
    def _attempt(self, pod, now):
        claims = self.diagnoser.claims
        if claims is not None and missing_claim(pod, claims) is not None:
            self._unschedulable(pod, self.diagnoser.diagnose(pod).message(), now)   # step 0
        view = PodView(pod, self.ignored_resources)
        records = self.view.algorithm.records
        feasible, refused, resolvable = self._own_filter(view, records, pod)
        if not feasible:
            self._post_filter(pod, view, records, refused, resolvable, now)
        try:
            answer = self.door.call("filter", {"Pod": pod, "Nodes": None,
                                               "NodeNames": feasible})
        except CallFailed as exc:
            self._error(pod, f"filter: {exc}", now)
        if field(answer, "Error"):
            self._error(pod, field(answer, "Error"), now)
        kept = field(answer, "NodeNames") or []
        sent = set(feasible)
        for name in kept:
            if name not in sent:
                self._error(pod, f'extender claims a filtered node "{name}" which is not '
                                 "found in the input node list", now)
        if not kept:
            # kube-scheduler's preemption follows, as after its own filters; the extender's
            # FailedNodes are resolvable, its FailedAndUnresolvableNodes not (02 rej-2).
            failed = field(answer, "FailedNodes") or {}
            refused.update(field(answer, "FailedAndUnresolvableNodes") or {})
            refused.update(failed)
            self._post_filter(pod, view, records, refused, resolvable | set(failed), now,
                              by_extender=True)
        self._bind(pod, kept[0], now)

    def _own_filter(self, view, records, pod):
        """(names of the nodes that pass, in kube-scheduler's order; name -> reason refused;
        the names refused only for what eviction can cure: resources, host ports)."""
        ordered, by_name = records.ordered, records.by_name
        checks = predicates.for_pod(view)
        nominated = (pod.get("status") or {}).get("nominatedNodeName") or ""
        if nominated in by_name and predicates.run(checks, view, by_name[nominated])[0] is None:
            return [nominated], {}, set()
        wanted = feasible_to_find(len(ordered))
        feasible, refused, resolvable = [], {}, set()
        total = len(ordered)
        start = self.next_start % total if total else 0
        processed = 0
        for index in range(total):
            record = ordered[(start + index) % total]
            processed += 1
            reason, check = predicates.run(checks, view, record)
            if reason is None:
                feasible.append(record.name)
                if len(feasible) >= wanted:
                    break
            else:
                # v1.36.2 counts every untolerated taint under one reason (cases.json,
                # gpu-untolerated); the predicate's own words name the taint.
                refused[record.name] = (UNTOLERATED_TAINTS
                                        if check is predicates.taint_toleration else reason)
                if check in predicates.RESOLVABLE:
                    resolvable.add(record.name)
        self.next_start = (start + processed) % total if total else 0
        return feasible, refused, resolvable

    def _bind(self, pod, node, now):
        try:
            assumed = self.view.assume(pod, node)
        except CacheError as exc:      # its cache holds the pod already: try it again later
            self._error(pod, f"assume: {exc}", now)
        meta = _meta(pod)
        try:
            answer = self.door.call("bind", {"PodName": meta["name"],
                                             "PodNamespace": meta.get("namespace", ""),
                                             "PodUID": meta["uid"], "Node": node})
            error = field(answer, "Error") if isinstance(answer, dict) else "not an object"
            answered = isinstance(answer, dict)
        except CallFailed as exc:
            error, answered = f"bind: {exc}", False
        if error:
            self.view.forget(assumed)
            self._error(pod, error, now, answered)
        self.queue.bound(pod)
        raise Outcome("bind")

    # --- preemption (PostFilter) ---------------------------------------------------------
    def _post_filter(self, pod, view, records, refused, resolvable, now, by_extender=False):
        total = len(records.ordered)
        candidates = self._candidates(view, records, refused, resolvable, pod)
        if not candidates:     # no node where eviction makes room: no preempt call
            message = self._no_candidates(pod, view, total, refused, resolvable, by_extender)
            self._unschedulable(pod, message, now, by_extender)
        if isinstance(candidates, str):
            self._unschedulable(pod, fit_message(total, refused, candidates), now, by_extender)
        body = {"Pod": pod, "NodeNameToVictims": None, "NodeNameToMetaVictims": {
            name: {"Pods": [{"UID": v.key} for v in victims], "NumPDBViolations": 0}
            for name, victims in candidates.items()}}
        try:
            answer = self.door.call("preempt", body)
        except Refused as exc:
            self._error(pod, f"preempt: {exc}", now)
        except CallFailed as exc:        # 04a, 04b: unschedulable, no timed retry
            self._unschedulable(pod, fit_message(total, refused, f"{exc}", failed=True), now)
        chosen = self._answered_victims(field(answer, "NodeNameToMetaVictims"), records)
        if isinstance(chosen, str):
            self._unschedulable(pod, fit_message(total, refused, chosen,
                                                 failed=chosen != NO_CANDIDATE), now)
        node = self._pick_node(chosen, records)
        message = fit_message(total, refused)
        self.queue.unschedulable(pod, now, self.view.changes)
        self._report(pod, "Unschedulable", message, now, nominate=node)
        deleted = sum(self._evict(pod, victim, node, now) for victim in chosen[node])
        log.info("pod %s preempts %d pod(s) on node %s", _name(pod), deleted, node)
        raise Outcome("preempt", message, victims=deleted)

    def _candidates(self, view, records, refused, resolvable, pod):
        """node name -> victims (PodInfos) where preemption makes room ({}: none), or why
        the pod may not preempt."""
        if not view.may_preempt:
            return NEVER
        nominated = (pod.get("status") or {}).get("nominatedNodeName") or ""
        if nominated in records.by_name:
            for info in records.by_name[nominated].info.pods:
                facts = self.view.victim_facts(info.key)
                # kube-scheduler's podTerminatingByPreemption: deleted by a preemption.
                if (info.priority < view.priority and facts is not None
                        and facts.deleting and facts.preempted):
                    return "not eligible due to a terminating pod on the nominated node."
        wanted = max(MIN_CANDIDATE_NODES, len(records.ordered) * CANDIDATE_PERCENT // 100)
        candidates = {}
        for record in records.ordered:
            if record.name not in resolvable:
                continue
            victims = preemption.select_victims(view, record)
            if victims:
                candidates[record.name] = victims
                if len(candidates) >= wanted:
                    break
        return candidates

    def _no_candidates(self, pod, view, total, refused, resolvable, by_extender) -> str:
        """kube-scheduler's message when preemption found no candidate (02 rej-2, 07 noop-2).
        After its own filters alone: the diagnosis's, which runs the same filters and tells
        a request above a node's allocatable, which no eviction cures, from one victims
        could make room for (why-pending/cases.json, case cpu: "7 Preemption is not helpful
        for scheduling"). After the extender's refusals, which the diagnosis does not see,
        or for a pod asking for a resource left to the extender: its FailedNodes are
        resolvable, its FailedAndUnresolvableNodes not (02 rej-2)."""
        leaves_to_extender = any(amount > 0 and name in self.ignored_resources
                                 for name, amount in view.requested.scalar_resources.items())
        if not (by_extender or leaves_to_extender):
            return self.diagnoser.diagnose(pod).message()
        verdicts = {name: NO_VICTIMS if name in resolvable else NOT_HELPFUL for name in refused}
        return fit_message(total, refused, fit_message(total, verdicts))

    def _answered_victims(self, answered, records):
        """node -> victims (PodInfos) from preempt's answer, or why there is no preemption."""
        if not answered or not isinstance(answered, dict):
            return NO_CANDIDATE
        chosen = {}
        for name, victims in answered.items():
            record = records.by_name.get(name)
            if record is None:
                return f'extender answered node "{name}", which is not found'
            on_node = {info.key: info for info in record.info.pods}
            uids = [field(v, "UID") for v in (field(victims, "Pods") or ())]
            if not uids:
                return f'expected at least one victim pod on node "{name}"'     # 03e
            missing = [u for u in uids if u not in on_node]
            if missing:                                                          # 03g
                return (f"extender claims to preempt pod (UID: {missing[0]}) on node: "
                        f"{name}, but the pod is not found on that node")
            chosen[name] = [on_node[u] for u in uids]
        return chosen

    def _pick_node(self, chosen, records):
        """kube-scheduler's pickOneNodeForPreemption (no PDBs here: none is violated)."""
        def key(name):
            victims = chosen[name]
            highest = max(v.priority for v in victims)
            starts = [self._start_time(v) for v in victims if v.priority == highest]
            # The node whose highest-priority victims started last (their earliest start
            # the latest) loses the least work: negated for min().
            earliest = min((_epoch(s) for s in starts if s), default=0.0)
            return (highest, sum(v.priority + MAX_PRIORITY_SHIFT for v in victims),
                    len(victims), -earliest, records.by_name[name].index)
        return min(chosen, key=key)

    def _start_time(self, info) -> str:
        facts = self.view.victim_facts(info.key)
        return facts.start_time if facts is not None else ""

    def _evict(self, pod, info, node, now) -> int:
        """Mark the victim DisruptionTarget and delete it gracefully, this very pod (its uid
        a precondition), as kube-scheduler's preemption executor does; 1 if deleted."""
        facts = self.view.victim_facts(info.key)
        if facts is None or facts.deleting:
            return 0         # gone, or already on its way out
        name, namespace = info.name, info.namespace
        condition = {"type": "DisruptionTarget", "status": "True", "lastProbeTime": None,
                     "lastTransitionTime": timestamp_text(now), "reason": "PreemptionByScheduler",
                     "message": PREEMPTED_MESSAGE}
        try:
            if not facts.preempted:
                self.api.patch_namespaced_pod_status(
                    name, namespace, {"status": {"conditions": [condition]}},
                    _preload_content=False, _request_timeout=KUBE_TIMEOUT).release_conn()
            self.api.delete_namespaced_pod(
                name, namespace, body={"preconditions": {"uid": info.key}},
                _preload_content=False, _request_timeout=KUBE_TIMEOUT).release_conn()
        except ApiException as exc:
            if exc.status not in (404, 409):   # gone, or replaced by a pod of the same name
                log.warning("preempting %s/%s for %s on %s: %s %s", namespace, name,
                            _name(pod), node, exc.status, exc.reason)
            return 0
        except (HTTPError, OSError) as exc:
            log.warning("preempting %s/%s for %s: the cluster: %s", namespace, name,
                        _name(pod), exc)
            return 0
        return 1

    # --- failures --------------------------------------------------------------------------
    def _error(self, pod, message, now, answered=False):
        """A failed attempt: backoff, and the pod's condition says SchedulerError (05a).
        `answered`: the message is the extender's answer (the owner logged it)."""
        self.queue.failed(pod, now)
        self._report(pod, "SchedulerError", message, now)
        raise Outcome("error", message, answered=answered)

    def _unschedulable(self, pod, message, now, by_extender=False):
        self.queue.unschedulable(pod, now, self.view.changes, by_extender)
        self._report(pod, "Unschedulable", message, now)
        raise Outcome("wait", message)

    def _report(self, pod, reason, message, now, nominate=None):
        """Write the PodScheduled=False condition (and a nomination) to the pod's status,
        when it changed: kube-scheduler's "Updating pod condition and nominated node name"
        (03a), a strategic merge patch of pods/status."""
        status = pod.get("status") or {}
        current = next((c for c in status.get("conditions") or ()
                        if c.get("type") == "PodScheduled"), {})
        unchanged = (current.get("status"), current.get("reason"),
                     current.get("message")) == ("False", reason, message)
        if unchanged and (nominate is None or status.get("nominatedNodeName") == nominate):
            return
        change = {}
        if not unchanged:
            change["conditions"] = [{
                "type": "PodScheduled", "status": "False", "lastProbeTime": None,
                "lastTransitionTime": (current.get("lastTransitionTime")
                                       if current.get("status") == "False"
                                       else timestamp_text(now)),
                "reason": reason, "message": message}]
        if nominate is not None:
            change["nominatedNodeName"] = nominate
        meta = _meta(pod)
        try:
            self.api.patch_namespaced_pod_status(
                meta["name"], meta.get("namespace", ""), {"status": change},
                _preload_content=False, _request_timeout=KUBE_TIMEOUT).release_conn()
        except ApiException as exc:
            if exc.status != 404:
                log.warning("writing %s's status: %s %s", _name(pod), exc.status, exc.reason)
        except (HTTPError, OSError) as exc:
            log.warning("writing %s's status: the cluster: %s", _name(pod), exc)


def _epoch(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()
