"""The diagnosis against the straightforward reading of the filters, on random clusters.

The diagnosis counts nodes by shared reason tuples and works a node's amounts out
lazily (scheduling.diagnosis); here every node is checked the plain way, through
predicates.run with the filters predicates.for_pod picks (the algorithm's own), and
its amounts computed once more from the record: both must agree node for node."""
from hypothesis import given, settings
from hypothesis import strategies as st

from schedcache import Cache
from scheduling import diagnosis as dx
from scheduling import predicates
from scheduling.podview import PodView
from simcluster.generate import make_node, make_pod

GPU = "nvidia.com/gpu"
TAINT = {"key": "dedicated", "value": "infra", "effect": "NoSchedule"}

requests = st.fixed_dictionaries({}, optional={
    "cpu": st.integers(1, 6000).map(lambda m: f"{m}m"),
    "memory": st.integers(1, 8192).map(lambda mi: f"{mi}Mi"),
    "ephemeral-storage": st.integers(1, 64).map(lambda gi: f"{gi}Gi"),
    GPU: st.integers(1, 4).map(str)})

nodes = st.lists(st.fixed_dictionaries({
    "cpu": st.integers(1, 8).map(str), "memory": st.sampled_from(["2Gi", "8Gi"]),
    "pods": st.integers(1, 4).map(str), "gpus": st.integers(0, 4),
    "tainted": st.booleans(), "cordoned": st.booleans(),
    "placed": st.lists(requests, max_size=4)}), min_size=1, max_size=8)


def _cluster(specs):
    cache = Cache(ttl=0)
    for i, spec in enumerate(specs):
        node = make_node(f"n{i}", cpu=spec["cpu"], memory=spec["memory"], pods=spec["pods"],
                         gpus=spec["gpus"], taints=[TAINT] if spec["tainted"] else None)
        node["spec"]["unschedulable"] = spec["cordoned"] or None
        cache.add_node(node)
        for j, asked in enumerate(spec["placed"]):
            cache.add_pod(make_pod(f"p{i}-{j}", node_name=f"n{i}", requests=asked,
                                   uid=f"uid-p{i}-{j}", tolerations=[{"operator": "Exists"}]))
    return cache


def _plain_verdict(view, record):
    """(reasons, details) the slow way: the first refusing filter, then every amount."""
    reason, check = predicates.run(predicates.for_pod(view), view, record)
    if check is None:
        return None
    if check is not predicates.resources_fit:
        reason = dx.UNTOLERATED_TAINTS if check is predicates.taint_toleration else reason
        return (reason,), None
    reasons = tuple(reason.split(", "))
    details = []
    if predicates.TOO_MANY_PODS in reasons:
        pods = record.allocatable.allowed_pod_number
        details.append(f"Too many pods: {pods - record.free_pods} of {pods} pods placed")
    for name, asked, free, cap in (
            ("cpu", view.milli_cpu, record.free_cpu, record.allocatable.milli_cpu),
            ("memory", view.memory, record.free_memory, record.allocatable.memory),
            ("ephemeral-storage", view.ephemeral_storage, record.free_ephemeral,
             record.allocatable.ephemeral_storage),
            *((n, q, record.free_scalars.get(n, 0), record.allocatable.scalar_resources.get(n, 0))
              for n, q in view.scalars)):
        if predicates.insufficient(name) in reasons:
            details.append(f"Insufficient {name}: asks {dx.amount(name, asked)}, "
                           f"{dx.amount(name, free)} free of {dx.amount(name, cap)}")
    return reasons, details


@settings(max_examples=150, deadline=None)
@given(specs=nodes, asked=requests, tolerant=st.booleans())
def test_every_node_reads_as_the_plain_filters_say(specs, asked, tolerant):
    cache = _cluster(specs)
    pod = make_pod("pending", requests=asked, uid="uid-pending",
                   tolerations=[{"operator": "Exists"}] if tolerant else None)
    diagnoser = dx.Diagnoser(cache)
    for _ in range(2):      # the second time from the memo of the amounts
        diagnosis = diagnoser.diagnose(pod)
        view, records = PodView(pod), diagnoser.live.records
        verdicts = {v.node: v for v in diagnosis.verdicts}
        counts = {}
        for record in records.ordered:
            plain = _plain_verdict(view, record)
            if plain is None:
                assert record.name in diagnosis.feasible and record.name not in verdicts
                continue
            verdict = verdicts[record.name]
            # read before and after the amounts are written out: the same answers
            lazy = (verdict.resolvable, verdict.shortness)
            assert verdict.reasons == plain[0]
            if plain[1] is not None:
                assert verdict.details == plain[1]
                assert (verdict.resolvable, verdict.shortness) == lazy
            for reason in plain[0]:
                counts[reason] = counts.get(reason, 0) + 1
        assert diagnosis.counts == counts
        assert {r["reason"]: r["count"] for r in diagnosis.reasons()} == counts
        if not diagnosis.feasible:
            assert diagnosis.filter_message() == dx.summary(len(records.ordered), counts)
