"""The filter's early stop loses nothing: it picks the node the pass over every node picks,
and a pod that fits nowhere gets the same reasons and preemption candidates."""
from hypothesis import given, settings, strategies as st

from schedcache import Cache
from scheduling import DefaultAlgorithm
from scheduling.podview import PodView
from simcluster.generate import make_node

from tests.scheduling.sched_builders import pod

TAINT = [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]

nodes = st.lists(st.tuples(st.sampled_from(["zone-a", "zone-b", "zone-c"]),
                           st.sampled_from(["1", "2", "4"]), st.booleans()),
                 min_size=1, max_size=12)
pending = st.lists(st.tuples(st.sampled_from(["250m", "1", "1500m", "3", "5"]),
                             st.sets(st.integers(0, 13))), min_size=1, max_size=15)


def node_names(count, chosen):
    return [f"n{i}" if i < count else f"ghost-{i}" for i in sorted(chosen)] or None


def round_robin_choice(algorithm, names, refused):
    """The feasible node nearest after the round robin's start, found the slow way."""
    records = algorithm.records
    start, count = algorithm.spreading.start(records), len(records.ordered)
    feasible = [r for r in records.ordered
                if (names is None or r.name in names) and r.name not in refused]
    return min(feasible, key=lambda r: (r.index - start) % count, default=None)


@settings(max_examples=60, deadline=None)
@given(nodes, pending)
def test_early_stop_chooses_what_the_full_pass_chooses(node_specs, pods):
    cache = Cache(ttl=0)
    for i, (zone, cpu, tainted) in enumerate(node_specs):
        cache.add_node(make_node(f"n{i}", zone=zone, allocatable={"cpu": cpu, "pods": "110"},
                                 taints=TAINT if tainted else None))
    algorithm = DefaultAlgorithm(cache)
    for cpu, suggested in pods:
        pending_pod = pod(requests={"cpu": cpu})
        names = node_names(len(node_specs), suggested)
        algorithm.refresh()
        view = PodView(pending_pod)
        quick = algorithm.filter(view, names)
        full = algorithm.filter(view, names, every_node=True)
        assert quick.chosen is full.chosen
        assert quick.chosen is round_robin_choice(algorithm, names, full.reasons)
        if full.chosen is None:
            assert quick.reasons == full.reasons
            assert quick.resolvable == full.resolvable
            assert full.feasible == 0
        result = algorithm.schedule(pending_pod, names)
        if result.kind == "bind":
            assert result.bind_info.node == full.chosen.name
            node = result.bind_info.node
            cache.assume_pod(dict(pending_pod, spec=dict(pending_pod["spec"], nodeName=node)))


def test_the_pass_stops_at_the_first_feasible_node_in_round_robin_order(cluster):
    cache, algorithm, add = cluster
    for i in range(4):
        add(f"n{i}", zone=f"zone-{i}", allocatable={"cpu": "2", "pods": "110"})
    algorithm.refresh()
    view = PodView(pod(requests={"cpu": "1"}))
    quick = algorithm.filter(view, None)
    full = algorithm.filter(view, None, every_node=True)
    assert quick.chosen is full.chosen
    assert (quick.feasible, full.feasible) == (1, 4)
