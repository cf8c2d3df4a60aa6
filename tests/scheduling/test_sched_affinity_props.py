"""Inter-pod affinity read from the grouped index (podaffinity.PlacedPods, kept by one
Diagnoser across pods placed and removed and terms reading ever more keys) says what a
pass over every placed pod with its whole labels says, node by node."""
import itertools

from hypothesis import example, given, settings, strategies as st

from schedcache import Cache
from scheduling import diagnosis as dx
from scheduling.podaffinity import (AFFINITY, ANTI_AFFINITY, EXISTING_ANTI_AFFINITY,
                                    own_terms, placed_anti_affinity)
from simcluster.generate import make_node, make_pod

ZONE, HOST = "topology.kubernetes.io/zone", "kubernetes.io/hostname"
NODES = {"n0": "z1", "n1": "z1", "n2": "z2", "n3": None}     # n3 has no zone label
UIDS = itertools.count()   # unique across examples, as uids are: terms are memoised by uid
KEYS, VALUES, NAMESPACES = ("app", "tier", "uniq"), ("a", "b"), ("n1", "n2")

label_sets = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=4)
expressions = st.one_of(
    st.builds(lambda k, o, v: {"key": k, "operator": o, "values": v}, st.sampled_from(KEYS),
              st.sampled_from(("In", "NotIn")), st.lists(st.sampled_from(VALUES), min_size=1,
                                                         max_size=2, unique=True)),
    st.builds(lambda k, o: {"key": k, "operator": o}, st.sampled_from(KEYS),
              st.sampled_from(("Exists", "DoesNotExist"))))
selectors = st.one_of(
    st.builds(lambda m: {"matchLabels": m}, label_sets.filter(bool)),
    st.builds(lambda e: {"matchExpressions": e}, st.lists(expressions, min_size=1, max_size=2)),
    st.just({}))
terms = st.builds(lambda s, t, ns: {"labelSelector": s, "topologyKey": t,
                                    **({"namespaces": ns} if ns else {})},
                  selectors, st.sampled_from((ZONE, HOST)),
                  st.lists(st.sampled_from(NAMESPACES), max_size=2, unique=True))
affinities = st.builds(
    lambda aff, anti: {kind: {"requiredDuringSchedulingIgnoredDuringExecution": listed}
                       for kind, listed in (("podAffinity", aff), ("podAntiAffinity", anti))
                       if listed},
    st.lists(terms, max_size=2), st.lists(terms, max_size=2))
placed = st.fixed_dictionaries({"node": st.sampled_from(sorted(NODES)), "labels": label_sets,
                                "namespace": st.sampled_from(NAMESPACES),
                                "anti": st.lists(terms, max_size=1)})
steps = st.lists(st.one_of(
    st.tuples(st.just("place"), placed),
    st.tuples(st.just("remove"), st.integers(0, 30)),
    st.tuples(st.just("diagnose"), st.fixed_dictionaries({
        "labels": label_sets, "namespace": st.sampled_from(NAMESPACES),
        "affinity": affinities}))), min_size=1, max_size=25)


def node_labels(name):
    zone = NODES[name]
    return {HOST: name, **({ZONE: zone} if zone else {})}


def brute_force(cache, pod) -> dict:
    """node -> the inter-pod affinity reason refusing it (None: allowed), by every placed
    pod's whole labels, in upstream's order of the three checks."""
    namespace, labels = pod["metadata"]["namespace"], pod["metadata"].get("labels") or {}
    affinity, anti = own_terms(pod["spec"], namespace)
    everyone = [(info, node_labels(name)) for name, node in
                cache.get_node_name_to_info_map().items() for info in node.pods]
    matching = [(info, where) for info, where in everyone
                if all(t.matches(info.namespace, info.labels) for t in affinity)]
    counted = {(t.topology_key, where[t.topology_key]) for _, where in matching
               for t in affinity if t.topology_key in where}
    self_affine = all(t.matches(namespace, labels) for t in affinity)
    verdicts = {}
    for name in NODES:
        here = node_labels(name)
        verdicts[name] = None
        if affinity:
            if any(t.topology_key not in here for t in affinity):
                verdicts[name] = AFFINITY
                continue
            found = all((t.topology_key, here[t.topology_key]) in counted for t in affinity)
            if not (found or (not counted and self_affine)):
                verdicts[name] = AFFINITY
                continue
        if any(here.get(t.topology_key) is not None and t.matches(info.namespace, info.labels)
               and where.get(t.topology_key) == here[t.topology_key]
               for t in anti for info, where in everyone):
            verdicts[name] = ANTI_AFFINITY
            continue
        if any(t.matches(namespace, labels) and where.get(t.topology_key) is not None
               and here.get(t.topology_key) == where[t.topology_key]
               for info, where in everyone for t in placed_anti_affinity(info)):
            verdicts[name] = EXISTING_ANTI_AFFINITY
    return verdicts


def reading(key) -> dict:
    return {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {key: "a"}}, "topologyKey": ZONE}]}}


@settings(max_examples=300, deadline=None)
@given(steps=steps)
@example(steps=[     # groups read alike in "tier" only must split when a term reads "app"
    ("place", {"node": "n0", "labels": {"app": "a"}, "namespace": "n1", "anti": []}),
    ("diagnose", {"labels": {}, "namespace": "n1", "affinity": reading("tier")}),
    ("diagnose", {"labels": {}, "namespace": "n1", "affinity": reading("app")})])
def test_the_index_says_what_every_placed_pod_says(steps):
    cache = Cache(ttl=0)
    for name in NODES:
        node = make_node(name, cpu="64", pods="110")
        node["metadata"]["labels"] = node_labels(name)
        cache.add_node(node)
    diagnoser, placed_pods = dx.Diagnoser(cache), []
    for kind, what in steps:
        count = next(UIDS)
        if kind == "place":
            anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                                        what["anti"]}} if what["anti"] else None
            pod = make_pod(f"p{count}", namespace=what["namespace"], node_name=what["node"],
                           labels=what["labels"], requests={"cpu": "10m"},
                           uid=f"uid-{count}", affinity=anti)
            cache.add_pod(pod)
            placed_pods.append(pod)
        elif kind == "remove" and placed_pods:
            cache.remove_pod(placed_pods.pop(what % len(placed_pods)))
        elif kind == "diagnose":
            pod = make_pod(f"pending-{count}", namespace=what["namespace"],
                           labels=what["labels"], requests={"cpu": "10m"},
                           uid=f"uid-pending-{count}", affinity=what["affinity"] or None)
            diagnosis = diagnoser.diagnose(pod)
            said = {v.node: v.reasons[0] for v in diagnosis.verdicts}
            assert {name: said.get(name) for name in NODES} == brute_force(cache, pod)
