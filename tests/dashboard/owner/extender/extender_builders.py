"""Builders for the extender tests: a real Cache, the real DefaultAlgorithm, a bind recorder,
and request bodies as kube-scheduler marshals them."""
import json

import orjson

from schedcache import Cache
from scheduling import DefaultAlgorithm
from simcluster.generate import make_node, make_pod

from dashboard.kube.binding import FINISH
from dashboard.owner.changes import CacheChanges
from dashboard.owner.extender import Extender, PodScheduleStatuses
from dashboard.owner.extender.answers import answer
from dashboard.owner.extender.handlers import verb_handlers
from dashboard.owner.journal import Journal

SMALL = {"cpu": "4", "memory": "8Gi", "pods": "110", "ephemeral-storage": "10Gi"}


class BindRecorder:
    """Stands in for the Celery batched bind path: records schedule_bind calls."""

    def __init__(self):
        self.calls = []
        self.fail = None

    def __call__(self, uid, namespace, name, node):
        if self.fail is not None:
            raise self.fail
        self.calls.append((uid, namespace, name, node))


class World:
    def __init__(self):
        self.cache = Cache(ttl=0)
        self.algorithm = DefaultAlgorithm(self.cache)
        self.statuses = PodScheduleStatuses()
        self.binds = BindRecorder()
        self.known = {}   # uid -> pod: the pods "the watch has shown", as it shows them
        # the owner's doors, with the journal that stamps their events
        self.journal = Journal(self.cache, clock=lambda: 0.0)
        self.extender = Extender(self.cache, self.algorithm, self.statuses, self.binds,
                                 watched_pod=self.known.get,
                                 changes=CacheChanges(self.cache, self.journal))
        self.cache.subscribe(self.extender.on_cache_event)   # what the owner does
        self.nodes = {}
        self._n = 0

    def node(self, name, **kwargs):
        kwargs.setdefault("allocatable", SMALL)
        node = make_node(name, **kwargs)
        self.cache.add_node(node)
        self.nodes[name] = node
        return node

    def pod(self, name=None, **kwargs):
        self._n += 1
        name = name or f"p{self._n}"
        kwargs.setdefault("uid", f"uid-{name}")
        pod = make_pod(name, **kwargs)
        meta = pod["metadata"]
        self.known[meta["uid"]] = pod
        return pod

    def running(self, name, node, **kwargs):
        pod = self.pod(name, node_name=node, **kwargs)
        self.cache.add_pod(pod)
        return pod

    def state(self):
        """Everything a refused request must leave alone."""
        dump = self.cache.dump()
        nodes = {n: (i.generation, sorted(i.pod_keys)) for n, i in dump.nodes.items()}
        return (self.cache.generation, self.cache.pod_keys(), sorted(dump.assumed_pods), nodes,
                self.statuses.dump(), list(self.binds.calls))


def wire(body):
    """The body as kube-scheduler's JSON on the wire (and back)."""
    return json.loads(json.dumps(body))


def filter_args(pod, nodes, cache_capable=True):
    """ExtenderArgs as kube-scheduler's HTTPExtender.Filter marshals it (Go field names)."""
    if cache_capable:
        return wire({"Pod": pod, "Nodes": None,
                     "NodeNames": [n["metadata"]["name"] for n in nodes]})
    return wire({"Pod": pod, "Nodes": {"metadata": {}, "items": list(nodes)}, "NodeNames": None})


def bind_args(pod, node):
    meta = pod["metadata"]
    return wire({"PodName": meta["name"], "PodNamespace": meta["namespace"],
                 "PodUID": meta["uid"], "Node": node})


def preempt_args(pod, meta_victims):
    """ExtenderPreemptionArgs with nodeCacheCapable true (NodeNameToMetaVictims)."""
    return wire({"Pod": pod, "NodeNameToVictims": None, "NodeNameToMetaVictims": {
        node: {"Pods": [{"UID": u} for u in uids], "NumPDBViolations": 0}
        for node, uids in meta_victims.items()}})


def result_names(result):
    """The feasible node names of an ExtenderFilterResult, whichever form it uses."""
    if result["NodeNames"] is not None:
        assert result["Nodes"] is None
        return result["NodeNames"]
    return [n["metadata"]["name"] for n in result["Nodes"]["items"]]


class Bindings:
    """The API server's side of the Bindings the listener posts: records them and answers
    each with the next outcome queued (FINISH by default)."""

    def __init__(self):
        self.posted, self.outcomes = [], []

    def __call__(self, uid, namespace, name, node):
        self.posted.append((uid, namespace, name, node))
        return self.outcomes.pop(0) if self.outcomes else (FINISH, "bound")


def call(world, verb, body, bindings=None):
    """(status, answer) of one kube-scheduler call, through the listener's rules."""
    handlers = verb_handlers(world.extender)
    return answer(f"extender_{verb}", orjson.dumps(body),
                  lambda op, args: handlers[op](args, "kube-scheduler"),
                  bindings or Bindings())
