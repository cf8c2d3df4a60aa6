"""The diagnosis against what a real kube-scheduler v1.36.2 said (why_pending/cases.json, a
copy of shared/k8s-wire/why-pending/: its README says how it was recorded).

For each case the cluster is built as it was (nodes_before, and the placed pods the
README describes), the case's pod is diagnosed, and the message must equal
kube-scheduler's last FailedScheduling message: reason for reason, count for count,
with the preemption part where it cannot help, and without one where it helps.
"""
import pytest

from schedcache import Cache
from scheduling import diagnosis as dx
from scheduling import podaffinity as pa
from simcluster.generate import make_node, make_pod
from tests.scheduling import why_pending as why
from tests.scheduling.why_pending import BY_NAME, CASES, PRIORITIES


# The recording's namespace held no PersistentVolumeClaim (its README).
CLAIMS = frozenset()


def _cluster(claims=CLAIMS):
    cache = Cache(ttl=0)
    for recorded in CASES["nodes_before"]:
        cache.add_node(why.node(recorded))
    for pod in why.placed_pods():
        cache.add_pod(pod)
    return cache, dx.Diagnoser(cache, claims)


def _diagnose(name, claims=CLAIMS):
    cache, diagnoser = _cluster(claims)
    return diagnoser.diagnose(why.pending(BY_NAME[name]))


def _filter_part(message):
    """The message without its post-filter part (after the filters' reasons, or after a
    PreFilter refusal's sentence)."""
    return message.split(" no new claims to deallocate, ")[0].removesuffix(
        f" {dx.CLAIM_POST_FILTER}")


REFUSED = [c["case"] for c in CASES["cases"] if c["pod_scheduled"]["status"] == "False"]


def test_the_recording_holds_the_cases_the_readme_lists():
    assert len(CASES["cases"]) == 16 and CASES["kube_scheduler"].startswith("v1.36.2")
    assert len(REFUSED) == 14     # all but spread and preempt-helps (placed)


@pytest.mark.parametrize("name", REFUSED)
def test_the_message_is_kube_schedulers(name):
    """Filter part and preemption part both: the last message kube-scheduler wrote."""
    expected = BY_NAME[name]["failed_scheduling"][-1]
    assert expected == BY_NAME[name]["pod_scheduled"]["message"]
    diagnosis = _diagnose(name)
    assert not diagnosis.fits
    assert diagnosis.filter_message() == _filter_part(expected)
    assert diagnosis.message() == expected


def test_preemption_helps_names_the_node_and_its_victims_and_the_message_has_no_part_for_it():
    """preempt-helps: the recorded message has no preemption part (kube-scheduler nominated
    small-1 and evicted the low pods); the pod went to small-1."""
    case = BY_NAME["preempt-helps"]
    diagnosis = _diagnose("preempt-helps")
    assert diagnosis.message() == case["failed_scheduling"][-1]
    preemption = diagnosis.preemption
    assert preemption["helps"] and preemption["node"] == case["node_name"] == "small-1"
    # 3 cpu on 4: with any one of the three 1.2-cpu pods back, 2.8 is free; all three go.
    assert sorted(v["name"] for v in preemption["victims"]) == ["low-0", "low-1", "low-2"]
    assert {v["priority"] for v in preemption["victims"]} == {PRIORITIES["low"]}


def test_preemption_that_cannot_help_says_why_for_every_node():
    for name, expected in (("preempt-cannot", {dx.NOT_HELPFUL: 7}),
                           ("anti-affinity", {dx.NO_VICTIMS: 2, dx.NOT_HELPFUL: 5}),
                           ("host-port", {dx.NO_VICTIMS: 1, dx.NOT_HELPFUL: 6})):
        preemption = _diagnose(name).preemption
        assert not preemption["helps"] and preemption["node"] is None
        assert {r["reason"]: r["count"] for r in preemption["reasons"]} == expected, name


def test_the_same_pod_at_a_lower_priority_finds_no_victims():
    """preempt-helps without its priority: the low pods outrank it, nothing is evicted."""
    cache, diagnoser = _cluster()
    pod = why.pending(BY_NAME["preempt-helps"])
    pod["spec"]["priority"] = 0
    diagnosis = diagnoser.diagnose(pod)
    assert not diagnosis.preemption["helps"]
    assert diagnosis.message().endswith(
        "preemption: 0/7 nodes are available: 1 No preemption victims found for incoming pod, "
        "6 Preemption is not helpful for scheduling.")


def test_a_pod_that_never_preempts_says_so_as_kube_scheduler_would():
    cache, diagnoser = _cluster()
    pod = why.pending(BY_NAME["preempt-helps"])
    pod["spec"]["preemptionPolicy"] = "Never"
    diagnosis = diagnoser.diagnose(pod)
    assert not diagnosis.preemption["eligible"]
    assert diagnosis.message().endswith(
        "no new claims to deallocate, preemption: not eligible due to preemptionPolicy=Never.")


def test_the_spread_case_fits_where_kube_scheduler_placed_it():
    """spread was placed on small-2: the diagnosis finds room there and refuses nothing
    it should not (topology spread is not modelled, see the module's doc)."""
    diagnosis = _diagnose("spread")
    assert diagnosis.fits and BY_NAME["spread"]["node_name"] in diagnosis.feasible
    assert diagnosis.preemption is None


def test_a_missing_claim_refuses_every_node_before_any_filter():
    """missing-pvc: VolumeBinding's PreFilter refused it before any node was tried; every
    node counts under that sentence, nothing is checked node by node, no dry run."""
    diagnosis = _diagnose("missing-pvc")
    refusal = 'persistentvolumeclaim "no-such-claim" not found'
    assert not diagnosis.fits and diagnosis.verdicts == [] and diagnosis.preemption is None
    [group] = diagnosis.reasons()
    assert (group["reason"], group["count"]) == (refusal, 7)
    assert sorted(group["nodes"]) == sorted(recorded["name"] for recorded in CASES["nodes_before"])
    assert diagnosis.counts == {refusal: 7} and diagnosis.unchecked() == []


@pytest.mark.parametrize("claims, fits", [
    ({("why", "no-such-claim")}, True),          # it exists: the filters decide, and pass
    ({("elsewhere", "no-such-claim")}, False),   # a claim of that name in another namespace
])
def test_a_claim_counts_in_the_pods_namespace_only(claims, fits):
    assert _diagnose("missing-pvc", claims).fits is fits


def test_without_the_claims_a_claim_is_named_as_unchecked_not_guessed():
    """A Diagnoser that is not told the claims (claims=None) checks none and says so."""
    diagnosis = _diagnose("missing-pvc", claims=None)
    assert diagnosis.fits
    assert any('persistentvolumeclaim "no-such-claim"' in note for note in diagnosis.unchecked())


def test_each_node_says_its_first_refusing_filter_with_the_amounts():
    nodes = {v.node: v for v in _diagnose("cpu").verdicts}
    assert nodes["cordoned-0"].filter == "NodeUnschedulable"
    assert nodes["gpu-0"].details == ["node(s) had untolerated taint {nvidia.com/gpu: present}"]
    assert nodes["infra-0"].reasons == (dx.UNTOLERATED_TAINTS,)
    assert nodes["small-1"].details == ["Insufficient cpu: asks 64, 0.4 free of 4"]
    assert nodes["tiny-0"].reasons == ("Too many pods", "Insufficient cpu")
    assert nodes["tiny-0"].details[0] == "Too many pods: 1 of 1 pods placed"
    assert not nodes["small-1"].resolvable      # 64 cpu is more than the node has at all


def test_the_closest_nodes_are_the_least_short():
    closest = _diagnose("preempt-helps").closest()   # only small-1 passes the selector
    assert [c["node"] for c in closest] == ["small-1"]
    assert closest[0]["details"] == ["Insufficient cpu: asks 3, 0.4 free of 4"]
    closest = _diagnose("memory").closest()
    assert closest[0]["details"] == ["Insufficient memory: asks 512Gi, 7.9Gi free of 8Gi"]
    assert closest[-1]["node"] == "tiny-0"           # short of memory and of room for a pod


def test_the_reasons_group_the_nodes_largest_group_first():
    reasons = _diagnose("cpu").as_dict()["reasons"]
    assert (reasons[0]["reason"], reasons[0]["count"]) == ("Insufficient cpu", 4)
    assert sorted(reasons[0]["nodes"]) == ["small-0", "small-1", "small-2", "tiny-0"]
    assert [r["count"] for r in reasons] == sorted((r["count"] for r in reasons), reverse=True)


def test_the_diagnosis_follows_the_cache_and_changes_nothing():
    """A dry run: the cache's generation does not move; a new node that fits is seen."""
    cache, diagnoser = _cluster()
    pod = why.pending(BY_NAME["preempt-helps"])
    generation = cache.generation
    assert not diagnoser.diagnose(pod).fits
    assert cache.generation == generation and len(cache.node_info("small-1").pods) == 3
    cache.add_node(make_node("small-1b", labels={"kubernetes.io/hostname": "small-1"}))
    assert diagnoser.diagnose(pod).feasible == ["small-1b"]


def test_no_nodes_at_all():
    diagnoser = dx.Diagnoser(Cache(ttl=0))
    diagnosis = diagnoser.diagnose(why.pending(BY_NAME["cpu"]))
    assert diagnosis.message() == dx.NO_NODES and diagnosis.preemption is None


@pytest.mark.parametrize("resource, value, text", [
    ("cpu", 1500, "1.5"), ("cpu", 4000, "4"), ("memory", 512 * 2 ** 30, "512Gi"),
    ("memory", 64 * 2 ** 20, "64Mi"), ("nvidia.com/gpu", 8, "8"), ("memory", 100, "100")])
def test_amounts_read_as_a_person_writes_them(resource, value, text):
    assert dx.amount(resource, value) == text


def test_a_placed_pods_anti_affinity_keeps_the_pod_out_of_its_zone():
    """db-0 (small-2, zone-c) refusing app=web in its zone: zone-c's schedulable nodes say
    so, unless a filter earlier in the order refuses them first (tiny-0 is full)."""
    cache, diagnoser = _cluster()
    cache.remove_pod(cache.get_pod({"metadata": {"uid": "uid-db-0"}}))
    cache.add_pod(make_pod("db-0", namespace="why", node_name="small-2", labels={"role": "db"},
                           requests={"cpu": "100m"}, uid="uid-db-0", affinity={
                               "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                                   {"labelSelector": {"matchLabels": {"app": "web"}},
                                    "topologyKey": "topology.kubernetes.io/zone"}]}}))
    pod = why.pending(BY_NAME["selector"])
    pod["spec"].pop("nodeSelector")
    pod["metadata"]["labels"] = {"app": "web"}
    nodes = {v.node: v for v in diagnoser.diagnose(pod).verdicts}
    assert nodes["small-2"].reasons == ("node(s) didn't satisfy existing pods anti-affinity rules",)
    assert nodes["tiny-0"].reasons == ("Too many pods",)
    pod["metadata"]["namespace"] = "elsewhere"      # the term covers db-0's namespace only
    assert "small-2" in diagnoser.diagnose(pod).feasible


def test_the_first_of_a_self_affine_group_may_go_anywhere():
    """Required affinity to its own labels while no pod matches: allowed (upstream's rule)."""
    cache, diagnoser = _cluster()
    pod = why.pending(BY_NAME["pod-affinity"])
    pod["metadata"]["labels"] = {"role": "cache"}
    diagnosis = diagnoser.diagnose(pod)
    assert sorted(diagnosis.feasible) == ["small-0", "small-1", "small-2"]


def test_the_placed_pods_index_follows_pods_and_nodes_between_diagnoses():
    """PlacedPods reads a node again only when it changed: a pod placed, then removed, and
    a node removed, between two diagnoses, all count (or stop counting) at once."""
    cache, diagnoser = _cluster()
    pod = why.pending(BY_NAME["anti-affinity"])
    pod["spec"].pop("nodeSelector")
    assert "small-0" in diagnoser.diagnose(pod).feasible
    db = make_pod("db-1", namespace="why", node_name="small-0", labels={"role": "db"},
                  requests={"cpu": "100m"}, uid="uid-db-1")
    cache.add_pod(db)
    refused = {v.node: v.reasons for v in diagnoser.diagnose(pod).verdicts}
    assert refused["small-0"] == ("node(s) didn't match pod anti-affinity rules",)
    cache.remove_pod(db)
    assert "small-0" in diagnoser.diagnose(pod).feasible
    cache.remove_pod(cache.get_pod({"metadata": {"uid": "uid-db-0"}}))
    assert "small-2" in diagnoser.diagnose(pod).feasible
    assert not [labels for labels in diagnoser.placed.group_labels.values()
                if labels.get("role") == "db"]
    assert ("role", "db") not in diagnoser.placed.by_label


def test_preemption_frees_a_host_port_held_by_a_lower_priority_pod():
    """host-port at high priority: port-holder (priority 0) is the victim on small-0."""
    cache, diagnoser = _cluster()
    pod = why.pending(BY_NAME["host-port"])
    pod["spec"]["priority"] = PRIORITIES["high"]
    preemption = diagnoser.diagnose(pod).preemption
    assert preemption["helps"] and preemption["node"] == "small-0"
    assert [v["name"] for v in preemption["victims"]] == ["port-holder"]


def test_a_node_eviction_cannot_help_says_what_stays_short():
    """gpu-0 holds a low and a high GPU pod: evicting the low one leaves 3 of 4 GPUs, and
    the pod asks 4. The dry run's verdict there is kube-scheduler's fit reason."""
    cache, diagnoser = _cluster()
    toleration = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    for name, priority in (("gpu-low", PRIORITIES["low"]), ("gpu-high", PRIORITIES["high"])):
        cache.add_pod(make_pod(name, namespace="why", node_name="gpu-0", uid=f"uid-{name}",
                               requests={"cpu": "100m", "nvidia.com/gpu": "1"},
                               tolerations=toleration, priority=priority))
    pod = why.pending(BY_NAME["gpu-tolerated"])
    pod["spec"]["priority"] = PRIORITIES["high"]
    pod["spec"]["containers"][0]["resources"] = {"requests": {"nvidia.com/gpu": "4"},
                                                 "limits": {"nvidia.com/gpu": "4"}}
    diagnosis = diagnoser.diagnose(pod)
    assert {v.node: v.details for v in diagnosis.verdicts}["gpu-0"] == [
        "Insufficient nvidia.com/gpu: asks 4, 2 free of 4"]
    assert diagnosis.message().endswith(
        "preemption: 0/7 nodes are available: 1 Insufficient nvidia.com/gpu, "
        "6 Preemption is not helpful for scheduling.")


def test_the_dry_run_stops_at_enough_candidates_as_kube_scheduler_does():
    """120 full nodes, each freed by evicting its one low pod: the dry run stops at
    max(100, 10% of the nodes) = 100 candidates and chooses among them."""
    cache = Cache(ttl=0)
    for i in range(120):
        cache.add_node(make_node(f"n{i:03d}", cpu="1", memory="1Gi"))
        cache.add_pod(make_pod(f"low-{i}", node_name=f"n{i:03d}", requests={"cpu": "1"},
                               priority=PRIORITIES["low"], uid=f"uid-low-{i}"))
    pod = make_pod("vip", requests={"cpu": "1"}, priority=PRIORITIES["high"], uid="uid-vip")
    preemption = dx.Diagnoser(cache).diagnose(pod).preemption
    assert preemption["helps"] and len(preemption["candidates"]) == dx.MIN_CANDIDATES
    assert preemption["node"] in preemption["candidates"] and len(preemption["victims"]) == 1


def test_a_node_that_changed_is_explained_again_not_from_the_memo():
    """The amounts are memoised per node record: a pod placed on small-1 between two
    diagnoses of the same pod shows in small-1's amounts at once."""
    cache, diagnoser = _cluster()
    pod = why.pending(BY_NAME["cpu"])
    before = {v.node: v.details for v in diagnoser.diagnose(pod).verdicts}
    assert before["small-1"] == ["Insufficient cpu: asks 64, 0.4 free of 4"]
    cache.add_pod(make_pod("more", namespace="why", node_name="small-1",
                           requests={"cpu": "200m"}, uid="uid-more"))
    after = {v.node: v.as_dict()["details"] for v in diagnoser.diagnose(pod).verdicts}
    assert after["small-1"] == ["Insufficient cpu: asks 64, 0.2 free of 4"]
    assert after["small-0"] == before["small-0"]


def test_the_memo_keeps_the_latest_shapes_only():
    cache, diagnoser = _cluster()
    for cpu in range(1, dx.MEMO_SHAPES + 3):
        diagnoser.diagnose(make_pod(f"p{cpu}", requests={"cpu": f"{cpu * 10}"})).as_dict()
    assert len(diagnoser.memos) == dx.MEMO_SHAPES
    assert (("cpu", (dx.MEMO_SHAPES + 2) * 10_000),) in diagnoser.memos


def test_the_placed_pods_groups_share_one_key_and_count_pods_node_by_node():
    """Pods alike in namespace and in the labels terms read are one group, whatever else
    they carry (a pod-template-hash each, here), whose key is one object however many pods
    and nodes carry it, counted per node; the group goes with its last pod."""
    cache, diagnoser = _cluster()
    web = [make_pod(f"web-{i}", namespace="why", node_name=node,
                    labels={"role": "shop", "pod-template-hash": f"h{i}"},
                    requests={"cpu": "10m"}, uid=f"uid-web-{i}")
           for i, node in enumerate(["small-0", "small-0", "small-1"])]
    for pod in web:
        cache.add_pod(pod)
    pod = why.pending(BY_NAME["pod-affinity"])  # its one term reads "role": groups are read
    diagnoser.diagnose(pod)
    placed = diagnoser.placed
    assert placed.named == ("role",)
    [key] = [key for key, labels in placed.group_labels.items() if labels.get("role") == "shop"]
    assert placed.group_labels[key] == {"role": "shop"}
    assert placed.groups[key] == {"small-0": 2, "small-1": 1}
    keys = [k for node in ("small-0", "small-1") for k in placed._group_nodes[node][1]
            if k == key]
    assert len(keys) == 2 and keys[0] is keys[1]
    for placed_pod in web[:2]:
        cache.remove_pod(placed_pod)
    diagnoser.diagnose(pod)
    assert placed.groups[key] == {"small-1": 1}
    cache.remove_pod(web[2])
    diagnoser.diagnose(pod)
    assert key not in placed.groups and key not in placed.group_labels
    assert ("role", "shop") not in placed.by_label


def test_a_term_reading_a_new_key_splits_the_groups_and_pairs_name_one_group_or_a_table():
    """Two pods alike in "role" are one group while terms read "role" only; a pending pod
    whose terms read "track" too splits them. by_label keeps the one group with a pair as
    its key, a table from the second on, and the key alone again when one is left;
    candidates() finds the groups either way."""
    cache, diagnoser = _cluster()
    shop = make_pod("shop-0", namespace="why", node_name="small-0", labels={"role": "shop"},
                    requests={"cpu": "10m"}, uid="uid-shop-0")
    canary = make_pod("shop-1", namespace="why", node_name="small-1",
                      labels={"role": "shop", "track": "canary"}, requests={"cpu": "10m"},
                      uid="uid-shop-1")
    for placed_pod in (shop, canary):
        cache.add_pod(placed_pod)
    role = pa.Term({"labelSelector": {"matchLabels": {"role": "shop"}},
                    "topologyKey": "kubernetes.io/hostname"}, "why")
    track = pa.Term({"labelSelector": {"matchExpressions": [
        {"key": "track", "operator": "In", "values": ["canary"]}]},
        "topologyKey": "kubernetes.io/hostname"}, "why")
    pod = why.pending(BY_NAME["pod-affinity"])       # reads "role"
    diagnoser.diagnose(pod)
    placed = diagnoser.placed
    [both] = placed.candidates(role)
    assert placed.groups[both] == {"small-0": 1, "small-1": 1}
    assert placed.by_label[("role", "shop")] is both
    assert placed.candidates(track) == []             # "track" not named: no group has it
    pod["spec"]["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]\
        .append({"labelSelector": {"matchLabels": {"track": "canary"}},
                 "topologyKey": "kubernetes.io/hostname"})
    diagnoser.diagnose(pod)
    assert placed.named == ("role", "track")
    groups = {frozenset(labels.items()): key for key, labels in placed.group_labels.items()}
    plain = groups[frozenset({("role", "shop")})]
    split = groups[frozenset({("role", "shop"), ("track", "canary")})]
    assert placed.by_label[("role", "shop")] == {plain: None, split: None}
    assert set(placed.candidates(role)) == {plain, split}
    assert placed.candidates(track) == [split]
    assert placed.by_label[("track", "canary")] is split
    cache.remove_pod(shop)
    diagnoser.diagnose(pod)
    assert placed.by_label[("role", "shop")] is split
    assert placed.candidates(role) == [split]
    cache.remove_pod(canary)
    diagnoser.diagnose(pod)
    assert ("role", "shop") not in placed.by_label and ("track", "canary") not in placed.by_label
