"""The owner's commands (over Redis, see commands.py): op -> handler(args, actor).

Each command that changes the cache checks what it names and calls a door of
`changes.py` with the cause its actor implies (bind, reaper, owner, or operator for
a person or a tool); a refusal (CommandError) changes nothing.
"""
from schedcache import CacheError

from dashboard.owner.cache_dump import dump_page
from dashboard.owner.commands import CommandError
from dashboard.owner.pending_queue import pending_page
from dashboard.owner.pod_ref import pod_ref

_COMMAND_CAUSES = {"bind": "bind", "reaper": "reaper", "comparer": "owner", "system": "owner"}


def command_cause(actor: str) -> str:
    """The cause a command's changes are recorded with, from who sent it."""
    return _COMMAND_CAUSES.get(actor, "operator")


class CommandHandlers:
    """`owner` is the CacheOwner: its cache, doors (`changes`), feed (`applier`),
    comparer and status."""

    def __init__(self, owner):
        self.owner = owner
        self.cache = owner.cache
        self.changes = owner.changes
        self.applier = owner.applier

    def handlers(self) -> dict:
        return {"assume": self.assume, "finish_binding": self.finish_binding,
                "forget": self.forget, "expire": self.expire, "reap": self.reap,
                "compare": self.compare, "get_pod": self.get_pod, "get_node": self.get_node,
                "diagnose": self.diagnose, "pending_pods": self.pending_pods,
                "dump_cache": self.dump_cache,
                "status": self.status}

    def assume(self, args, actor):
        """A pending pod assumed on a node, checked by the algorithm's filters unless
        forced; the node's aggregates before and after, and the lease term it holds under."""
        node = args.get("node") or ""
        if not node:
            raise CommandError(400, "assume needs a node")
        uid = self._uid(args)
        state = self.cache.pod_state(pod_ref(uid))
        if state is not None:
            raise CommandError(409, f"pod {uid} is already {state}; "
                                    f"only a pending pod can be assumed")
        pod = self.applier.pending.get(uid)
        if pod is None:
            raise CommandError(404, f"pod {uid} is not a pending pod of the cluster")
        if not self.applier.has_node(node):
            raise CommandError(404, f"node {node!r} is not in the cache")
        meta = pod.get("metadata") or {}
        placed = dict(pod, spec=dict(pod.get("spec") or {}, nodeName=node))
        fit_reason = self.owner.fit_reason
        misfit = fit_reason(placed, node) if fit_reason is not None else None
        if misfit and not args.get("force"):
            raise CommandError(409, f"pod {meta.get('namespace')}/{meta.get('name')} does not "
                                    f"fit on node {node}: {misfit} (force assumes it anyway)")
        before = self._aggregates(node)
        try:
            self.changes.assume(placed, command_cause(actor), actor)
        except CacheError as exc:
            raise CommandError(409, str(exc)) from None
        # The term goes with the pod's bind: the worker refuses it once another owner leads.
        return {"uid": uid, "namespace": meta.get("namespace"), "name": meta.get("name"),
                "node": node, "forced_past": misfit, "before": before,
                "after": self._aggregates(node), "term": self.owner.term}

    def finish_binding(self, args, actor):
        uid = self._uid(args)
        changed = self.changes.finish_binding(uid, command_cause(actor), actor,
                                              now=args.get("now"))
        return {"uid": uid, "changed": changed}

    def forget(self, args, actor):
        """An assumed pod forgotten; one not in the cache is a no-op unless `strict`. Its
        `reason` (a bind task's: the API server's answer) stays on the transition."""
        uid = self._uid(args)
        node = self._assumed_node(uid, args.get("strict", False))
        if node is None:
            return {"uid": uid, "changed": False}
        if args.get("node") and args["node"] != node:
            raise CommandError(409, f"pod {uid} is assumed on {node!r}, not {args['node']!r}")
        reason = args.get("reason") or ""
        if not isinstance(reason, str):
            raise CommandError(400, "forget's reason must be a string")
        before = self._aggregates(node)
        self.changes.forget(uid, node, command_cause(actor), actor, why=reason)
        return {"uid": uid, "changed": True, "node": node, "before": before,
                "after": self._aggregates(node)}

    def expire(self, args, actor):
        uid = self._uid(args)
        node = self._assumed_node(uid, True)
        before = self._aggregates(node)
        self.changes.expire(uid, command_cause(actor), actor, now=args.get("now"))
        return {"uid": uid, "changed": True, "node": node, "before": before,
                "after": self._aggregates(node)}

    def reap(self, args, actor):
        return {"expired": self.changes.reap(command_cause(actor), actor, now=args.get("now"))}

    def compare(self, args, actor):
        """List in the background; compare once the feed has caught up with the lists."""
        return self.owner.comparer.start()

    def get_pod(self, args, actor):
        uid = self._uid(args)
        state = self.cache.pod_state(pod_ref(uid))
        if state is None:
            if uid in self.applier.pending:
                return {"uid": uid, "state": "Pending", "pod": self.applier.pending[uid]}
            raise CommandError(404, f"pod {uid} is neither cached nor pending")
        status = self.cache.assumed_pod_status(pod_ref(uid))
        return {"uid": uid, "state": state, "pod": self.cache.get_pod(pod_ref(uid)),
                "binding_finished": status[0] if status else None,
                "deadline": status[1] if status else None}

    def diagnose(self, args, actor):
        """Why a pending pod is not running, as kube-scheduler would say it of the cache now
        (scheduling.diagnosis: a dry run, nothing changes), each refusing node's verdict
        too unless `nodes` is false; 409 for a pod the cache holds, 404 for one the watch
        has not shown. Linear in the nodes (bench/diagnosis_bench.py),
        so it holds the owner's loop for milliseconds."""
        uid, every_node = args.get("uid"), args.get("nodes", True)
        if not isinstance(uid, str) or not uid:
            raise CommandError(400, "diagnose needs the pod's uid")
        if not isinstance(every_node, bool):
            raise CommandError(400, "nodes must be true or false")
        state = self.cache.pod_state(pod_ref(uid))
        if state is not None:
            raise CommandError(409, f"pod {uid} is {state}, not pending: it has a node")
        pod = self.applier.pending.get(uid)
        if pod is None:
            raise CommandError(404, f"pod {uid} is neither cached nor pending")
        # the page shows the groups and the closest nodes only
        result = self.owner.diagnoser.diagnose(pod).as_dict(nodes=every_node)
        result["computed_at_seq"] = self.owner.seq_base + self.cache.event_seq
        # kube-scheduler's own last word, to read beside ours (the cache keeps only a
        # PodScheduled=False condition, see schedcache.podinfo)
        conditions = (pod.get("status") or {}).get("conditions") or ()
        result["kube_scheduler"] = conditions[0] if conditions else None
        return result

    def pending_pods(self, args, actor):
        """A page of the pending pods in kube-scheduler's queue order, with their first
        reasons and the counts by reason, namespace and priority (pending_queue.py)."""
        return pending_page(self.applier.pending, self.cache,
                            self.owner.pending_reasons.reasons, args)

    def get_node(self, args, actor):
        """A node's images (name, size, nodes holding it): the read model only counts them."""
        info = self.cache.node_info(args.get("name") or "")
        if info is None:
            raise CommandError(404, f"node {args.get('name')!r} is not in the cache")
        return {"name": info.name, "generation": info.generation,
                "images": sorted([image, state.size, state.num_nodes]
                                 for image, state in info.image_states.items())}

    def dump_cache(self, args, actor):
        """A page of the cache's dump, as upstream's debugger writes it (cache_dump.py)."""
        return dump_page(self.owner, args)

    def status(self, args, actor):
        return self.owner.status()

    def _aggregates(self, node):
        info = self.cache.node_info(node)
        if info is None:
            return None
        return {"pods": len(info.pods), "requested": info.requested.as_dict(),
                "non_zero_requested": info.non_zero_requested.as_dict(),
                "allocatable": info.allocatable.as_dict()}

    def _uid(self, args) -> str:
        """The uid a command names, directly or as the namespace/name of a pending pod."""
        if args.get("uid"):
            return args["uid"]
        namespace, name = args.get("namespace") or "", args.get("name") or ""
        if not name:
            raise CommandError(400, "name the pod by uid, or by namespace and name")
        uid = self.applier.uid_named(namespace, name)
        if not uid:
            raise CommandError(404, f"no pending pod {namespace}/{name}")
        return uid

    def _assumed_node(self, uid, strict):
        info = self.cache.pod_info(uid)
        if info is None or not self.cache.is_assumed_pod(pod_ref(uid)):
            if strict or info is not None:
                state = self.cache.pod_state(pod_ref(uid)) or "not in the cache"
                raise CommandError(409, f"pod {uid} is {state}, not Assumed")
            return None
        return info.node_name
