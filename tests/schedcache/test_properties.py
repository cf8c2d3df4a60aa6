"""Property-based tests: random operation sequences against the tests' own reference
model, with the invariants checked after every step.

- each NodeInfo's aggregates equal a recomputation from its pods and node;
- a snapshot brought up to date incrementally equals one built from scratch, and keeps
  the very objects of the NodeInfos that did not change;
- update_node_name_to_info_map touches only entries whose generation changed;
- counts agree; generations only grow and move exactly when a NodeInfo changes;
- an assumed pod never expires before its binding finished (nor before its deadline);
- refused operations leave the cache exactly as it was.

HYPOTHESIS_PROFILE=thorough runs many more and longer sequences.
"""

import copy

import pytest
from hypothesis import settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from schedcache import Cache, CacheCorruptedError, CacheError, Snapshot

import tests.schedcache.builders as b
import tests.schedcache.reference as ref

# the thorough profile runs for minutes, and shrinking a failure may take up to 5 minutes:
# lift the project's per-test timeout for these two tests
pytestmark = [pytest.mark.slow, pytest.mark.timeout(0 if ref.PROFILE == "thorough" else 900)]

NODE_NAMES = ["n0", "n1", "n2", "n3"]
UIDS = list(range(6))
TTL = 10.0
T0 = 1_700_000_000.0
IMAGE_SIZES = {"img/a:1": 100, "img/b:1": 200, "img/c:1": 300}
ZONES = [
    {},
    b.zone_labels("r1", "z1"),
    b.zone_labels("r1", "z2"),
    b.zone_labels("r2", "z1"),
    b.zone_labels("r1", "z1", beta=True),  # same key as r1/z1 through the deprecated labels
    b.zone_labels(zone="z3"),
]

node_specs = st.fixed_dictionaries(
    {
        "cpu": st.sampled_from(["1", "2", "500m", "4"]),
        "memory": st.sampled_from(["1Gi", "512Mi", "2G"]),
        "gpu": st.sampled_from([None, "1", "4"]),
        "zone": st.integers(0, len(ZONES) - 1),
        "images": st.sets(st.sampled_from(sorted(IMAGE_SIZES))),
    }
)

container_specs = st.fixed_dictionaries(
    {
        "cpu": st.sampled_from([None, "100m", "250m", "1", "0.5"]),
        "memory": st.sampled_from([None, "64Mi", "128Mi", "1Gi", "500"]),
        "gpu": st.sampled_from([None, None, "1"]),
    }
)

pod_specs = st.fixed_dictionaries(
    {
        "containers": st.lists(container_specs, min_size=1, max_size=2),
        "init": st.lists(container_specs, max_size=1),
        "overhead": st.sampled_from([None, {"cpu": "10m", "memory": "1Mi"}, {"cpu": "5m"}]),
        "port": st.sampled_from([None, ("", ""), ("127.0.0.1", "TCP"), ("0.0.0.0", "UDP"), (None, None)]),
        "affinity": st.sampled_from(sorted(b.AFFINITIES)),
        "pvc": st.sampled_from([None, "c1", "c2"]),
        "app": st.sampled_from(["web", "db"]),
    }
)


def make_node(name, spec, rv):
    return b.node(
        name,
        cpu=spec["cpu"],
        memory=spec["memory"],
        pods="110",
        scalars={"nvidia.com/gpu": spec["gpu"]} if spec["gpu"] else None,
        labels=ZONES[spec["zone"]],
        images=[(i, IMAGE_SIZES[i]) for i in sorted(spec["images"])],
        resource_version=str(rv),
    )


def _container(name, cs):
    return b.container(name, cpu=cs["cpu"], memory=cs["memory"], extra={"nvidia.com/gpu": cs["gpu"]} if cs["gpu"] else None)


def make_pod(u, node, spec, rv):
    """Pod number u; each pod has its own host port number (30000 + u), so pods never
    share an (ip, protocol, port) entry."""
    containers = [_container("c%d" % i, cs) for i, cs in enumerate(spec["containers"])]
    if spec["port"] is not None:
        ip, proto = spec["port"]
        containers[0]["ports"] = [b.port(30000 + u, ip=ip, protocol=proto)]
    inits = [_container("i%d" % i, cs) for i, cs in enumerate(spec["init"])]
    maker = b.AFFINITIES[spec["affinity"]]
    return b.pod(
        "pod-%d" % u,
        node,
        uid="uid-%d" % u,
        namespace="ns-a" if u % 2 == 0 else "ns-b",
        containers=containers,
        init_containers=inits or None,
        overhead=spec["overhead"],
        labels={"app": spec["app"]},
        affinity=maker() if maker else None,
        pvcs=[spec["pvc"]] if spec["pvc"] else (),
        resource_version=str(rv),
    )


def with_node_name(p, node_name):
    q = copy.deepcopy(p)
    q["spec"]["nodeName"] = node_name
    return q


def other_node(name):
    return NODE_NAMES[(NODE_NAMES.index(name) + 1) % len(NODE_NAMES)]


_PROBES = {u: b.pod("probe", "n0", uid="uid-%d" % u) for u in UIDS}


def probe(u):
    """Any pod with uid u finds the cache entry of pod u."""
    return _PROBES[u]


class Entry:
    def __init__(self, pod, state):
        self.pod = pod
        self.state = state  # "Assumed" or "Added"
        self.finished = False
        self.deadline = None

    @property
    def node(self):
        return self.pod["spec"]["nodeName"]


class CacheMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.cache = Cache(ttl=TTL)
        self.now = T0
        self.rv = 0
        self.nodes = {}  # name -> node object (present nodes)
        self.pods = {}  # u -> Entry (Assumed or Added)
        self.tree = ref.RefNodeTree()
        # generations
        self.gens = {}
        self.max_gen = 0
        self.touched = set()
        self.lenient = set()
        # a held snapshot and a held info map
        self.snap = Snapshot()
        self.snap_objs = {}
        self.snap_held = None
        self.info_map = {}
        self.map_held = None

    # -------------------------------------------------------------- helpers

    def next_rv(self):
        self.rv += 1
        return self.rv

    def pods_on(self, name):
        return [e.pod for _, e in sorted(self.pods.items()) if e.node == name]

    def nodeinfo_names(self):
        return set(self.nodes) | {e.node for e in self.pods.values()}

    def refused(self, call, exc=CacheError):
        ref.assert_refused(self.cache, call, exc, probe_pods=[probe(u) for u in UIDS])

    def check_returned(self, name, ni):
        want = ref.expected_info(self.nodes.get(name), self.pods_on(name), list(self.nodes.values()))
        assert ref.without(ref.info_view(ni), "generation") == want
        assert ni.generation == self.cache.dump().nodes[name].generation

    # ---------------------------------------------------------------- nodes

    @rule(name=st.sampled_from(NODE_NAMES), spec=node_specs, via_update=st.booleans(), stale_zone=st.integers(0, len(ZONES) - 1))
    def put_node(self, name, spec, via_update, stale_zone):
        node = make_node(name, spec, self.next_rv())
        if name in self.nodes:
            old = self.nodes[name]
            ni = self.cache.update_node(old, node)
            self.tree.update(old, node)
        elif via_update:
            # update_node adds a node that is not cached (never was, or was removed while
            # pods remained); the caller's "old" is stale
            stale = make_node(name, dict(spec, zone=stale_zone), 0)
            ni = self.cache.update_node(stale, node)
            self.tree.add(node)
        else:
            ni = self.cache.add_node(node)
            self.tree.add(node)
        self.nodes[name] = node
        self.touched.add(name)
        self.check_returned(name, ni)

    @rule(name=st.sampled_from(NODE_NAMES))
    def remove_node(self, name):
        if name not in self.nodes:
            self.refused(lambda: self.cache.remove_node(make_node(name, {"cpu": "1", "memory": "1Gi", "gpu": None, "zone": 0, "images": set()}, 0)))
            return
        node = self.nodes.pop(name)
        self.cache.remove_node(node)
        self.tree.remove(node)
        self.touched.add(name)

    # ----------------------------------------------------------------- pods

    @rule(u=st.sampled_from(UIDS), node=st.sampled_from(NODE_NAMES), spec=pod_specs)
    def assume(self, u, node, spec):
        pod = make_pod(u, node, spec, self.next_rv())
        if u in self.pods:
            self.refused(lambda: self.cache.assume_pod(pod))
            return
        self.cache.assume_pod(pod)
        self.pods[u] = Entry(pod, "Assumed")
        self.touched.add(node)

    @rule(u=st.sampled_from(UIDS))
    def finish_binding(self, u):
        e = self.pods.get(u)
        if e is None or e.state != "Assumed":
            return
        self.cache.finish_binding(e.pod, now=self.now)
        e.finished = True
        e.deadline = self.now + TTL

    @rule(u=st.sampled_from(UIDS), elsewhere=st.booleans())
    def forget(self, u, elsewhere):
        e = self.pods.get(u)
        if e is None:
            # not in the cache: a no-op, so retries are safe
            before = ref.dump_view(self.cache, [probe(x) for x in UIDS])
            self.cache.forget_pod(probe(u))
            assert ref.dump_view(self.cache, [probe(x) for x in UIDS]) == before
            return
        if e.state == "Added":
            self.refused(lambda: self.cache.forget_pod(e.pod))
            return
        if elsewhere:
            self.refused(lambda: self.cache.forget_pod(with_node_name(e.pod, other_node(e.node))))
            return
        self.cache.forget_pod(e.pod)
        del self.pods[u]
        self.touched.add(e.node)

    @rule(u=st.sampled_from(UIDS), node=st.sampled_from(NODE_NAMES), spec=pod_specs)
    def add(self, u, node, spec):
        pod = make_pod(u, node, spec, self.next_rv())
        e = self.pods.get(u)
        if e is not None and e.state == "Added":
            self.refused(lambda: self.cache.add_pod(pod))
            return
        self.cache.add_pod(pod)
        if e is not None:  # confirm an assumed pod
            if e.node == node:
                self.lenient.add(node)
            else:
                self.touched.add(e.node)
                self.touched.add(node)
        else:
            self.touched.add(node)
        self.pods[u] = Entry(pod, "Added")

    @rule(u=st.sampled_from(UIDS), spec=pod_specs, elsewhere=st.booleans())
    def update(self, u, spec, elsewhere):
        e = self.pods.get(u)
        if e is None:
            pod = make_pod(u, "n0", spec, self.next_rv())
            self.refused(lambda: self.cache.update_pod(pod, pod))
            return
        new = make_pod(u, other_node(e.node) if elsewhere else e.node, spec, self.next_rv())
        if e.state == "Assumed":
            self.refused(lambda: self.cache.update_pod(e.pod, new))
            return
        if elsewhere:
            self.refused(lambda: self.cache.update_pod(e.pod, new), CacheCorruptedError)
            return
        self.cache.update_pod(e.pod, new)
        e.pod = new
        self.touched.add(e.node)

    @rule(u=st.sampled_from(UIDS), naming=st.sampled_from(["same", "empty", "other"]))
    def remove(self, u, naming):
        e = self.pods.get(u)
        if e is None:
            self.refused(lambda: self.cache.remove_pod(probe(u)))
            return
        if naming == "other":
            self.refused(lambda: self.cache.remove_pod(with_node_name(e.pod, other_node(e.node))), CacheCorruptedError)
            return
        arg = e.pod if naming == "same" else with_node_name(e.pod, "")
        self.cache.remove_pod(arg)
        del self.pods[u]
        self.touched.add(e.node)

    @rule(dt=st.sampled_from([0.0, 0.5, 1.0, 5.0, 10.0, 20.0]))
    def tick_and_cleanup(self, dt):
        self.now += dt
        due = {u for u, e in self.pods.items() if e.state == "Assumed" and e.finished and e.deadline < self.now}
        got = self.cache.cleanup_assumed_pods(now=self.now)
        assert sorted(got) == sorted("uid-%d" % u for u in due)
        for u in due:
            self.touched.add(self.pods.pop(u).node)

    # ----------------------------------------------------------- snapshots

    @rule()
    def update_snapshot(self):
        self.cache.update_snapshot(self.snap)
        ref.assert_snapshot_consistent(self.cache, self.snap)
        assert ref.snapshot_names(self.snap) == self.tree.list()
        for name, ni in self.snap.node_info_map.items():
            prev = self.snap_objs.get(name)
            if prev is not None and prev[0] == ni.generation:
                assert ni is prev[1], "an unchanged NodeInfo of the snapshot must stay the same object"
        self.snap_objs = {name: (ni.generation, ni) for name, ni in self.snap.node_info_map.items()}
        self.snap_held = ref.snapshot_view(self.snap, images="full")

    @rule()
    def update_info_map(self):
        prev = dict(self.info_map)
        prev_gens = {n: ni.generation for n, ni in prev.items()}
        self.cache.update_node_name_to_info_map(self.info_map)
        d = self.cache.dump()
        assert set(self.info_map) == set(d.nodes)
        for name, ni in self.info_map.items():
            if name in prev and prev_gens[name] == d.nodes[name].generation:
                assert ni is prev[name], "an entry whose generation did not change must not be touched"
            assert ref.info_view(ni, images="sizes") == ref.info_view(d.nodes[name], images="sizes")
        self.map_held = {n: ref.info_view(ni) for n, ni in self.info_map.items()}

    # ----------------------------------------------------------- invariants

    @invariant()
    def cache_matches_model(self):
        """One dump per step, checked against the model: NodeInfos, pods, counts, the
        other views, and generations."""
        d = self.cache.dump()
        assert set(d.nodes) == self.nodeinfo_names()
        present = list(self.nodes.values())
        views = {n: ref.info_view(ni) for n, ni in d.nodes.items()}
        for name, view in views.items():
            want = ref.expected_info(self.nodes.get(name), self.pods_on(name), present)
            assert ref.without(view, "generation") == want, name
        assert set(d.assumed_pods) == {"uid-%d" % u for u, e in self.pods.items() if e.state == "Assumed"}
        assert self.cache.pod_count() == len(self.pods)
        assert self.cache.node_count() == len(d.nodes)
        for u in UIDS:
            e = self.pods.get(u)
            assert self.cache.pod_state(probe(u)) == (e.state if e else None)
            assert self.cache.is_assumed_pod(probe(u)) == (e is not None and e.state == "Assumed")
            if e is not None:
                assert ref.plain(self.cache.get_pod(probe(u))) == e.pod

        # the other views agree with the dump
        m = self.cache.get_node_name_to_info_map()
        assert {n: ref.info_view(ni) for n, ni in m.items()} == views
        listed = sorted(p["metadata"]["uid"] for p in self.cache.list_pods())
        assert listed == sorted("uid-%d" % u for u in self.pods)
        web = sorted(p["metadata"]["uid"] for p in self.cache.list_pods("app=web"))
        assert web == sorted("uid-%d" % u for u, e in self.pods.items() if e.pod["metadata"]["labels"]["app"] == "web")

        # generations: only grow, distinct, move exactly when a NodeInfo changed
        gens = {n: v["generation"] for n, v in views.items()}
        assert len(set(gens.values())) == len(gens), "two NodeInfos share a generation"
        for name, g in gens.items():
            if name in self.touched:
                assert g > self.max_gen, "%s changed but did not take a new, larger generation" % name
            elif name in self.lenient:
                assert g >= self.gens[name]
            else:
                assert name in self.gens, "%s appeared without a change" % name
                assert g == self.gens[name], "%s did not change but its generation moved" % name
        self.gens = gens
        self.max_gen = max([self.max_gen] + list(gens.values()))
        self.touched = set()
        self.lenient = set()

    @invariant()
    def node_tree_matches_model(self):
        t = self.cache.node_tree
        assert list(t.list()) == self.tree.list()
        assert t.num_nodes == self.tree.num_nodes
        assert list(t.zones) == self.tree.zones

    @invariant()
    def held_copies_unchanged(self):
        if self.snap_held is not None:
            assert ref.snapshot_view(self.snap, images="full") == self.snap_held
        if self.map_held is not None:
            assert {n: ref.info_view(ni) for n, ni in self.info_map.items()} == self.map_held


CacheMachine.TestCase.settings = settings(settings.get_profile(ref.PROFILE))
TestCacheMachine = CacheMachine.TestCase


# ------------------------------------------------------------- the NodeTree


class NodeTreeMachine(RuleBasedStateMachine):
    """NodeTree driven directly, against upstream's algorithm (tests' own model)."""

    def __init__(self):
        super().__init__()
        self.t = Cache(ttl=0).node_tree
        self.model = ref.RefNodeTree()
        self.nodes = {}

    @rule(i=st.integers(0, 5), zone=st.integers(0, len(ZONES) - 1))
    def add(self, i, zone):
        name = "n%d" % i
        if name in self.nodes:
            return
        node = b.node(name, labels=ZONES[zone])
        self.t.add_node(node)
        self.model.add(node)
        self.nodes[name] = node

    @rule(i=st.integers(0, 5))
    def remove(self, i):
        node = self.nodes.pop("n%d" % i, None)
        if node is None:
            return
        self.t.remove_node(node)
        self.model.remove(node)

    @rule(i=st.integers(0, 5), zone=st.integers(0, len(ZONES) - 1))
    def update(self, i, zone):
        name = "n%d" % i
        old = self.nodes.get(name)
        if old is None:
            return
        new = b.node(name, labels=ZONES[zone], resource_version="2")
        self.t.update_node(old, new)
        self.model.update(old, new)
        self.nodes[name] = new

    @rule(k=st.integers(1, 4))
    def next(self, k):
        got = [self.t.next() for _ in range(k)]
        want = [self.model.next() for _ in range(k)]
        assert got == want

    @invariant()
    def same_tree(self):
        assert list(self.t.list()) == self.model.list()
        assert list(self.t.zones) == self.model.zones
        assert self.t.num_nodes == self.model.num_nodes


NodeTreeMachine.TestCase.settings = settings(settings.get_profile(ref.PROFILE))
TestNodeTreeMachine = NodeTreeMachine.TestCase
