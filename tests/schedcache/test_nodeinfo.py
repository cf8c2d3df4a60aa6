"""NodeInfo aggregation: requested / non_zero_requested (init containers, overhead,
extended resources, ephemeral storage), allocatable, affinity lists, PVC ref counts,
image states, generations, nodes removed while pods remain."""

import pytest

from schedcache import Cache, CacheError
from schedcache.podinfo import make_pod_info

import tests.schedcache.builders as b
import tests.schedcache.reference as ref

N1, N2, N3 = "node-1", "node-2", "node-3"
MI, GI = b.MI, b.GI
DEF_MEM = 200 * MI
c = b.container

# id, pods as (containers, init containers, overhead), requested (cpu m, mem, eph, scalars), non-zero (cpu m, mem)
REQUEST_CASES = [
    ("one pod", [([c(cpu="100m", memory="500")], None, None)], (100, 500, 0, {}), (100, 500)),
    (
        "two pods",
        [([c(cpu="100m", memory="500")], None, None), ([c(cpu="200m", memory="1Ki")], None, None)],
        (300, 1524, 0, {}),
        (300, 1524),
    ),
    ("no requests: non-zero defaults", [([c()], None, None)], (0, 0, 0, {}), (100, DEF_MEM)),
    ("cpu only", [([c(cpu="250m")], None, None)], (250, 0, 0, {}), (250, DEF_MEM)),
    ("memory only", [([c(memory="1Gi")], None, None)], (0, GI, 0, {}), (100, GI)),
    (
        "two containers, one without requests",
        [([c("a", cpu="100m", memory="100Mi"), c("b")], None, None)],
        (100, 100 * MI, 0, {}),
        (200, 100 * MI + DEF_MEM),
    ),
    (
        "explicit zero requests are not defaulted (upstream)",
        [([c(cpu="0", memory="0")], None, None)],
        (0, 0, 0, {}),
        (0, 0),
    ),
    (
        "init container larger in cpu, smaller in memory",
        [([c(cpu="100m", memory="100Mi")], [c("i", cpu="500m", memory="50Mi")], None)],
        (500, 100 * MI, 0, {}),
        (500, 100 * MI),
    ),
    (
        "sum of containers larger than the init container",
        [([c("a", cpu="300m"), c("b", cpu="300m")], [c("i", cpu="500m", memory="1Mi")], None)],
        (600, 1 * MI, 0, {}),
        (600, 2 * DEF_MEM),
    ),
    (
        "largest init container, per resource",
        [
            (
                [c(cpu="200m", memory="1Gi")],
                [c("i1", cpu="1", memory="10Mi"), c("i2", cpu="100m", memory="2Gi")],
                None,
            )
        ],
        (1000, 2 * GI, 0, {}),
        (1000, 2 * GI),
    ),
    (
        "init container without requests counts as defaults for non-zero",
        [([c(cpu="50m", memory="10Mi")], [c("i")], None)],
        (50, 10 * MI, 0, {}),
        (100, DEF_MEM),
    ),
    (
        "overhead",
        [([c(cpu="100m", memory="100Mi")], None, {"cpu": "10m", "memory": "5Mi"})],
        (110, 105 * MI, 0, {}),
        (110, 105 * MI),
    ),
    (
        "overhead cpu only on a pod without requests",
        [([c()], None, {"cpu": "250m"})],
        (250, 0, 0, {}),
        (350, DEF_MEM),
    ),
    (
        "overhead added after the init-container max",
        [([c(cpu="100m")], [c("i", cpu="1")], {"cpu": "100m"})],
        (1100, 0, 0, {}),
        (1100, DEF_MEM),
    ),
    (
        "extended resources are summed",
        [
            ([c(cpu="1", extra={"nvidia.com/gpu": "2"})], None, None),
            ([c(cpu="1", extra={"nvidia.com/gpu": "1"})], None, None),
        ],
        (2000, 0, 0, {"nvidia.com/gpu": 3}),
        (2000, 2 * DEF_MEM),
    ),
    (
        "example.com/foo summed, a name without a domain is not a scalar resource",
        [
            ([c(cpu="100m", memory="500", extra={"example.com/foo": "3"})], None, None),
            ([c(cpu="200m", memory="1Ki", extra={"example.com/foo": "5"})], None, None),
            ([c(cpu="100m", memory="500", extra={"random-invalid-extended-key": "100"})], None, None),
        ],
        (400, 2024, 0, {"example.com/foo": 8}),
        (400, 2024),
    ),
    (
        "init container's extended resource larger",
        [([c(extra={"nvidia.com/gpu": "1"})], [c("i", extra={"nvidia.com/gpu": "4"})], None)],
        (0, 0, 0, {"nvidia.com/gpu": 4}),
        (100, DEF_MEM),
    ),
    ("hugepages are scalar resources", [([c(extra={"hugepages-2Mi": "4Mi"})], None, None)], (0, 0, 0, {"hugepages-2Mi": 4 * MI}), (100, DEF_MEM)),
    (
        "ephemeral storage",
        [([c(ephemeral="500")], None, None), ([c(ephemeral="1Gi")], None, None)],
        (0, 0, 500 + GI, {}),
        (200, 2 * DEF_MEM),
    ),
    (
        "ephemeral storage: init container max",
        [([c(ephemeral="1Gi")], [c("i", ephemeral="2Gi")], None)],
        (0, 0, 2 * GI, {}),
        (100, DEF_MEM),
    ),
]


def _pods_for(specs):
    pods = []
    for i, (containers, inits, overhead) in enumerate(specs):
        pods.append(b.pod("p%d" % i, N1, containers=containers, init_containers=inits, overhead=overhead))
    return pods


def _check_requests(ni, requested, non_zero):
    cpu, mem, eph, scalars = requested
    assert ni.requested.milli_cpu == cpu
    assert ni.requested.memory == mem
    assert ni.requested.ephemeral_storage == eph
    assert {k: v for k, v in dict(ni.requested.scalar_resources).items() if v} == scalars
    assert (ni.non_zero_requested.milli_cpu, ni.non_zero_requested.memory) == non_zero


@pytest.mark.parametrize("specs,requested,non_zero", [t[1:] for t in REQUEST_CASES], ids=[t[0] for t in REQUEST_CASES])
@pytest.mark.parametrize("how", ["add", "assume"])
def test_requests(specs, requested, non_zero, how):
    cache = Cache(ttl=0)
    for p in _pods_for(specs):
        getattr(cache, how + "_pod")(p)
    _check_requests(cache.dump().nodes[N1], requested, non_zero)


@pytest.mark.parametrize("specs,requested,non_zero", [t[1:] for t in REQUEST_CASES], ids=[t[0] for t in REQUEST_CASES])
def test_reference_model_agrees_with_the_table(specs, requested, non_zero):
    """The tests' own reference model (used by the property tests) against the literal table."""
    req, nz_cpu, nz_mem = ref.sum_requests(_pods_for(specs))
    assert (req["milli_cpu"], req["memory"], req["ephemeral_storage"], req["scalar"]) == requested
    assert (nz_cpu, nz_mem) == non_zero


@pytest.mark.parametrize("specs,requested,non_zero", [t[1:] for t in REQUEST_CASES], ids=[t[0] for t in REQUEST_CASES])
def test_removing_the_pods_brings_requests_back_to_zero(specs, requested, non_zero):
    cache = Cache(ttl=0)
    cache.add_node(b.node(N1, cpu="64"))
    pods = _pods_for(specs)
    for p in pods:
        cache.add_pod(p)
    for p in pods:
        cache.remove_pod(p)
    _check_requests(cache.dump().nodes[N1], (0, 0, 0, {}), (0, 0))


def test_update_replaces_the_requests():
    cache = Cache(ttl=0)
    p1 = b.pod("p", N1, cpu="100m", memory="500")
    p2 = b.new_version(p1, cpu="700m")
    cache.add_pod(p1)
    cache.update_pod(p1, p2)
    _check_requests(cache.dump().nodes[N1], (700, 500, 0, {}), (700, 500))



def _sidecar(name, **requests):
    return dict(c(name, **requests), restartPolicy="Always")


# two pods as (containers, init containers, overhead), whether their requests are one object
# (pod_requests memoises a spec's requests, init containers and overhead included), and
# the cpu each requests (m)
SHARING_CASES = [
    ("replicas with an init container", ([c(cpu="100m")], [c("i", cpu="1")], None),
     ([c(cpu="100m")], [c("i", cpu="1")], None), True, (1000, 1000)),
    ("replicas with overhead", ([c(cpu="100m")], None, {"cpu": "10m"}),
     ([c(cpu="100m")], None, {"cpu": "10m"}), True, (110, 110)),
    ("the init container a sidecar in one", ([c(cpu="100m")], [c("i", cpu="1")], None),
     ([c(cpu="100m")], [_sidecar("i", cpu="1")], None), False, (1000, 1100)),
    ("a third container against overhead", ([c(), c(), c(cpu="1")], None, None),
     ([], None, {"cpu": "1"}), False, (1000, 1000)),
    ("an init container against a second container", ([c(cpu="1")], [c("i", cpu="1")], None),
     ([c(cpu="1"), c("i", cpu="1")], None, None), False, (1000, 2000)),
]


@pytest.mark.parametrize("first,second,shared,cpu", [t[1:] for t in SHARING_CASES],
                         ids=[t[0] for t in SHARING_CASES])
def test_pods_asking_alike_share_one_requests_object(first, second, shared, cpu):
    """Pods asking the same share their Resources (replicas with sidecars each had two of
    their own), and pods asking differently never get each other's."""
    a, b_ = map(make_pod_info, _pods_for([first, second]))
    assert (a.requested is b_.requested) == shared
    assert (a.non_zero_requested is b_.non_zero_requested) == shared
    assert (a.requested.milli_cpu, b_.requested.milli_cpu) == cpu

# ----------------------------------------------------------------- allocatable

ALLOCATABLE_CASES = [
    ("full", dict(cpu="4", memory="8Gi", ephemeral="100Gi", pods="110", scalars={"nvidia.com/gpu": "8"}), (4000, 8 * GI, 100 * GI, 110, {"nvidia.com/gpu": 8})),
    ("millicores and decimal memory", dict(cpu="1500m", memory="2G", pods="10"), (1500, 2_000_000_000, 0, 10, {})),
    ("nothing allocatable", dict(), (0, 0, 0, 0, {})),
    ("extended and hugepages", dict(cpu="1", scalars={"example.com/foo": "5", "hugepages-1Gi": "2Gi"}), (1000, 0, 0, 0, {"example.com/foo": 5, "hugepages-1Gi": 2 * GI})),
]


@pytest.mark.parametrize("kw,want", [t[1:] for t in ALLOCATABLE_CASES], ids=[t[0] for t in ALLOCATABLE_CASES])
def test_allocatable_from_status(kw, want):
    cache = Cache(ttl=0)
    returned = cache.add_node(b.node(N1, **kw))
    for ni in (returned, cache.dump().nodes[N1]):
        a = ni.allocatable
        got = (a.milli_cpu, a.memory, a.ephemeral_storage, a.allowed_pod_number, {k: v for k, v in dict(a.scalar_resources).items() if v})
        assert got == want


def test_update_node_replaces_allocatable_and_keeps_pods():
    cache = Cache(ttl=0)
    old = b.node(N1, cpu="1", memory="1Gi")
    new = b.node(N1, cpu="2", memory="500Mi", resource_version="2")
    cache.add_node(old)
    p = b.pod("p", N1, cpu="100m")
    cache.add_pod(p)
    returned = cache.update_node(old, new)
    for ni in (returned, cache.dump().nodes[N1]):
        assert (ni.allocatable.milli_cpu, ni.allocatable.memory) == (2000, 500 * MI)
        assert ref.plain(ni.node) == new
        assert [ref.pod_uid_of_info(pi) for pi in ni.pods] == [ref.uid(p)]


def test_update_node_adds_a_node_that_is_not_cached():
    cache = Cache(ttl=0)
    n = b.node(N1, cpu="3")
    returned = cache.update_node(b.node(N1, cpu="1"), n)
    assert ref.plain(returned.node) == n
    assert returned.allocatable.milli_cpu == 3000
    assert cache.node_count() == 1
    assert list(cache.node_tree.list()) == [N1]


def test_add_node_returns_a_copy_of_the_nodeinfo_with_pods():
    cache = Cache(ttl=0)
    p = b.pod("early", N1, cpu="100m", memory="1Mi")
    cache.add_pod(p)  # a pod may arrive before its node
    n = b.node(N1, cpu="2", memory="2Gi")
    returned = cache.add_node(n)
    want = ref.expected_info(n, [p], [n])
    assert ref.without(ref.info_view(returned), "generation") == want
    assert ref.info_view(returned) == ref.info_view(cache.dump().nodes[N1])


# -------------------------------------------------------------------- affinity

AFFINITY_CASES = [
    ("none", False, False),
    ("pod_affinity", True, False),
    ("anti_required", True, True),
    ("anti_preferred", True, False),
    ("node_only", False, False),
]


@pytest.mark.parametrize("variant,with_affinity,required_anti", AFFINITY_CASES)
def test_affinity_lists(variant, with_affinity, required_anti):
    cache = Cache(ttl=0)
    maker = b.AFFINITIES[variant]
    p = b.pod("p", N1, cpu="1", affinity=maker() if maker else None)
    plain_pod = b.pod("plain", N1, cpu="1")
    cache.add_pod(plain_pod)
    cache.add_pod(p)
    ni = cache.dump().nodes[N1]
    assert [ref.pod_uid_of_info(x) for x in ni.pods_with_affinity] == ([ref.uid(p)] if with_affinity else [])
    assert [ref.pod_uid_of_info(x) for x in ni.pods_with_required_anti_affinity] == ([ref.uid(p)] if required_anti else [])
    cache.remove_pod(p)
    ni = cache.dump().nodes[N1]
    assert list(ni.pods_with_affinity) == []
    assert list(ni.pods_with_required_anti_affinity) == []


def test_affinity_lists_follow_updates():
    cache = Cache(ttl=0)
    p = b.pod("p", N1, cpu="1")
    q = b.new_version(p)
    q["spec"]["affinity"] = b.pod_anti_affinity_required()
    cache.add_pod(p)
    cache.update_pod(p, q)
    ni = cache.dump().nodes[N1]
    assert [ref.plain(x.pod) for x in ni.pods_with_affinity] == [q]
    assert [ref.plain(x.pod) for x in ni.pods_with_required_anti_affinity] == [q]
    r = b.new_version(q)
    del r["spec"]["affinity"]
    cache.update_pod(q, r)
    ni = cache.dump().nodes[N1]
    assert list(ni.pods_with_affinity) == [] and list(ni.pods_with_required_anti_affinity) == []


# ------------------------------------------------------------------------ PVCs


def test_pvc_ref_counts():
    cache = Cache(ttl=0)
    cache.add_node(b.node(N1))
    cache.add_node(b.node(N2))
    a = b.pod("a", N1, namespace="ns1", pvcs=["data"])
    a2 = b.pod("a2", N1, namespace="ns1", pvcs=["data", "logs"])
    other_ns = b.pod("x", N1, namespace="ns2", pvcs=["data"])
    elsewhere = b.pod("e", N2, namespace="ns1", pvcs=["data"])
    for p in (a, a2, other_ns, elsewhere):
        cache.add_pod(p)
    d = cache.dump()
    assert dict(d.nodes[N1].pvc_ref_counts) == {"ns1/data": 2, "ns1/logs": 1, "ns2/data": 1}
    assert dict(d.nodes[N2].pvc_ref_counts) == {"ns1/data": 1}
    cache.remove_pod(a2)
    counts = {k: v for k, v in dict(cache.dump().nodes[N1].pvc_ref_counts).items() if v}
    assert counts == {"ns1/data": 1, "ns2/data": 1}
    cache.remove_pod(a)
    cache.remove_pod(other_ns)
    assert {k: v for k, v in dict(cache.dump().nodes[N1].pvc_ref_counts).items() if v} == {}


def test_pvc_counts_of_assumed_pods_and_non_pvc_volumes():
    cache = Cache(ttl=0)
    p = b.pod("p", N1, namespace="ns", pvcs=["c1"], volumes=[{"name": "tmp", "emptyDir": {}}])
    cache.assume_pod(p)
    assert dict(cache.dump().nodes[N1].pvc_ref_counts) == {"ns/c1": 1}
    cache.forget_pod(p)
    assert cache.dump().nodes.get(N1) is None


# ---------------------------------------------------------------------- images

IMG_A = ("registry.example/a:1", 100 * MI)
IMG_B = ("registry.example/b:1", 300 * MI)


def _images(ni):
    return {k: (s.size, s.num_nodes) for k, s in dict(ni.image_states).items()}


def test_image_states_counted_across_nodes():
    cache = Cache(ttl=0)
    n1 = b.node(N1, images=[IMG_A, IMG_B])
    n2 = b.node(N2, images=[IMG_A])
    n3 = b.node(N3)
    r1 = cache.add_node(n1)
    assert _images(r1) == {IMG_A[0]: (IMG_A[1], 1), IMG_B[0]: (IMG_B[1], 1)}
    cache.add_node(n2)
    cache.add_node(n3)
    d = cache.dump()
    assert _images(d.nodes[N1]) == {IMG_A[0]: (IMG_A[1], 2), IMG_B[0]: (IMG_B[1], 1)}
    assert _images(d.nodes[N2]) == {IMG_A[0]: (IMG_A[1], 2)}
    assert _images(d.nodes[N3]) == {}
    # a fresh snapshot counts too
    from schedcache import Snapshot

    snap = Snapshot()
    cache.update_snapshot(snap)
    assert _images(snap.node_info_map[N1]) == {IMG_A[0]: (IMG_A[1], 2), IMG_B[0]: (IMG_B[1], 1)}
    assert _images(snap.node_info_map[N2]) == {IMG_A[0]: (IMG_A[1], 2)}
    cache.remove_node(n2)
    assert _images(cache.dump().nodes[N1]) == {IMG_A[0]: (IMG_A[1], 1), IMG_B[0]: (IMG_B[1], 1)}


def test_image_states_follow_node_updates():
    cache = Cache(ttl=0)
    n1 = b.node(N1, images=[IMG_A])
    n2 = b.node(N2, images=[IMG_A])
    cache.add_node(n1)
    cache.add_node(n2)
    n2b = b.node(N2, images=[IMG_B], resource_version="2")
    cache.update_node(n2, n2b)
    d = cache.dump()
    assert _images(d.nodes[N1]) == {IMG_A[0]: (IMG_A[1], 1)}
    assert _images(d.nodes[N2]) == {IMG_B[0]: (IMG_B[1], 1)}


def test_image_with_several_names():
    cache = Cache(ttl=0)
    names = ["registry.example/a:1", "registry.example/a@sha256:0123"]
    n1 = b.node(N1, images=[(names, 42)])
    n2 = b.node(N2, images=[(names[1:], 42)])
    cache.add_node(n1)
    cache.add_node(n2)
    d = cache.dump()
    assert _images(d.nodes[N1]) == {names[0]: (42, 1), names[1]: (42, 2)}
    assert _images(d.nodes[N2]) == {names[1]: (42, 2)}


def test_a_name_a_node_reports_twice_counts_that_node_once():
    cache = Cache(ttl=0)
    n1 = b.node(N1, images=[IMG_A, IMG_A])
    cache.add_node(n1)
    cache.add_node(b.node(N2, images=[IMG_A]))
    assert _images(cache.dump().nodes[N2]) == {IMG_A[0]: (IMG_A[1], 2)}
    cache.remove_node(n1)
    assert _images(cache.dump().nodes[N2]) == {IMG_A[0]: (IMG_A[1], 1)}


def test_a_node_gives_its_images_back_as_it_reported_them():
    """Kept apart from the frozen node (shared with other nodes'), put back in their place:
    order, a repeated item, keys beyond names and size, the status's key order."""
    images = [{"names": ["registry.example/b:1"], "sizeBytes": 300},
              {"names": ["registry.example/a:1", "registry.example/a@sha256:01"],
               "sizeBytes": 100, "note": "kept"},
              {"names": ["registry.example/b:1"], "sizeBytes": 300},
              {"sizeBytes": 7}]
    node = b.node(N1, cpu="1")
    node["status"] = {"images": images, **node["status"], "phase": "Running"}
    cache = Cache(ttl=0)
    for info in (cache.add_node(node), cache.node_info(N1), cache.dump().nodes[N1]):
        assert info.node == node
        assert list(info.node["status"]) == list(node["status"])
    assert _images(cache.dump().nodes[N1]) == {
        "registry.example/b:1": (300, 1), "registry.example/a:1": (100, 1),
        "registry.example/a@sha256:01": (100, 1)}
    cache.update_node(node, b.node(N1, cpu="2", resource_version="2"))
    assert "images" not in cache.node_info(N1).node["status"]


def test_nodes_reporting_an_image_alike_hold_it_once():
    cache = Cache(ttl=0)
    first = cache.add_node(b.node(N1, images=[IMG_A, IMG_B, IMG_A]))   # one item twice
    second = cache.add_node(b.node(N2, images=[IMG_B]))
    assert first._s.images.entries[1] is second._s.images.entries[0]
    assert IMG_B[0].encode() not in first._s.frozen_node
    cache.remove_node(b.node(N1))
    assert _images(cache.dump().nodes[N2]) == {IMG_B[0]: (IMG_B[1], 1)}
    assert len(cache._images._entries) == 1
    cache.remove_node(b.node(N2))
    assert len(cache._images) == 0 and cache._images._entries == {}


def test_a_copy_keeps_the_image_counts_of_when_it_was_made():
    cache = Cache(ttl=0)
    cache.add_node(b.node(N1, images=[IMG_A]))
    copy = cache.node_info(N1)
    cache.add_node(b.node(N2, images=[IMG_A]))
    assert _images(copy) == {IMG_A[0]: (IMG_A[1], 1)}
    assert _images(cache.node_info(N1)) == {IMG_A[0]: (IMG_A[1], 2)}


# ----------------------------------------------------------------- generations


def _gens(cache):
    return {n: ni.generation for n, ni in cache.dump().nodes.items()}


def test_generation_grows_on_every_change_and_only_there():
    cache = Cache(ttl=10)
    n1, n2 = b.node(N1, cpu="1"), b.node(N2, cpu="1")
    cache.add_node(n1)
    g = _gens(cache)
    cache.add_node(n2)
    g2 = _gens(cache)
    assert g2[N1] == g[N1] and g2[N2] > g[N1]
    seen = [g2[N1], g2[N2]]
    p = b.pod("p", N1, cpu="100m")
    steps = [
        lambda: cache.assume_pod(p),
        lambda: cache.add_pod(b.new_version(p)),
        lambda: cache.update_pod(b.new_version(p), b.new_version(b.new_version(p))),
        lambda: cache.remove_pod(p),
        lambda: cache.update_node(n1, b.node(N1, cpu="2", resource_version="2")),
    ]
    for step in steps:
        before = _gens(cache)
        step()
        after = _gens(cache)
        assert after[N1] > max(seen), "a change to node-1 must take a new, larger generation"
        assert after[N2] == before[N2], "node-2 did not change"
        seen.append(after[N1])
    assert seen == sorted(seen) and len(set(seen)) == len(seen)


def test_generation_unchanged_by_reads_and_by_finish_binding():
    cache = Cache(ttl=10)
    cache.add_node(b.node(N1, cpu="1"))
    p = b.pod("p", N1, cpu="100m")
    cache.assume_pod(p)
    before = _gens(cache)
    cache.finish_binding(p, now=1000.0)
    cache.get_pod(p)
    cache.is_assumed_pod(p)
    cache.pod_state(p)
    cache.list_pods()
    cache.get_node_name_to_info_map()
    cache.node_tree.list()
    cache.cleanup_assumed_pods(now=1005.0)  # nothing expires yet
    assert _gens(cache) == before


def test_generation_unchanged_by_refused_operations():
    cache = Cache(ttl=10)
    cache.add_node(b.node(N1, cpu="1"))
    p = b.pod("p", N1, cpu="100m")
    cache.add_pod(p)
    before = _gens(cache)
    for call in (
        lambda: cache.add_pod(p),
        lambda: cache.assume_pod(p),
        lambda: cache.forget_pod(p),
        lambda: cache.remove_node(b.node(N2)),
    ):
        with pytest.raises(CacheError):
            call()
    assert _gens(cache) == before


def test_generation_is_cache_wide_across_nodes():
    """Each change takes the next value of one counter: no two NodeInfos share one."""
    cache = Cache(ttl=0)
    for i in range(6):
        cache.add_node(b.node("n%d" % i))
        cache.add_pod(b.pod("p%d" % i, "n%d" % (i % 3)))
    gens = list(_gens(cache).values())
    assert len(set(gens)) == len(gens)


# ------------------------------------------------- node removed with pods left


def test_node_removed_while_pods_remain_stays_as_nodeinfo_without_node():
    cache = Cache(ttl=0)
    n1 = b.node(N1, cpu="2", memory="1Gi", region="r", zone="z")
    n2 = b.node(N2, cpu="2")
    cache.add_node(n1)
    cache.add_node(n2)
    p1 = b.pod("p1", N1, cpu="500m", memory="50m")
    p2 = b.pod("p2", N1, cpu="500m", memory="50m")
    cache.add_pod(p1)
    cache.assume_pod(p2)
    cache.remove_node(n1)

    d = cache.dump()
    assert N1 in d.nodes
    assert d.nodes[N1].node is None
    assert sorted(ref.pod_uid_of_info(pi) for pi in d.nodes[N1].pods) == sorted([ref.uid(p1), ref.uid(p2)])
    assert d.nodes[N1].requested.milli_cpu == 1000
    assert N1 in cache.get_node_name_to_info_map()
    assert cache.get_node_name_to_info_map()[N1].node is None
    assert list(cache.node_tree.list()) == [N2]
    assert cache.node_tree.num_nodes == 1
    assert ref.plain(cache.get_pod(p1)) == p1
    assert cache.pod_count() == 2

    # removing a removed node again is refused
    ref.assert_refused(cache, lambda: cache.remove_node(n1), CacheError, [p1, p2])

    # pods of the removed node can still be updated and removed
    p1v2 = b.new_version(p1)
    cache.update_pod(p1, p1v2)
    cache.remove_pod(p1v2)
    assert cache.dump().nodes[N1].node is None
    cache.forget_pod(p2)
    assert N1 not in cache.dump().nodes
    assert N1 not in cache.get_node_name_to_info_map()


def test_node_removed_without_pods_disappears():
    cache = Cache(ttl=0)
    n1 = b.node(N1)
    cache.add_node(n1)
    cache.remove_node(n1)
    assert cache.node_count() == 0
    assert N1 not in cache.dump().nodes
    assert list(cache.node_tree.list()) == []


def test_node_re_added_after_removal_with_pods():
    cache = Cache(ttl=0)
    n1 = b.node(N1, cpu="2")
    cache.add_node(n1)
    p = b.pod("p", N1, cpu="300m")
    cache.add_pod(p)
    cache.remove_node(n1)
    n1b = b.node(N1, cpu="4", resource_version="5")
    returned = cache.add_node(n1b)
    for ni in (returned, cache.dump().nodes[N1]):
        assert ref.plain(ni.node) == n1b
        assert ni.allocatable.milli_cpu == 4000
        assert ni.requested.milli_cpu == 300
    assert list(cache.node_tree.list()) == [N1]


def test_pods_of_nodeinfo_hold_the_cached_versions():
    cache = Cache(ttl=0)
    p = b.pod("p", N1, cpu="1", labels={"a": "1"})
    cache.assume_pod(p)
    added = b.new_version(p, labels={"a": "2"})
    cache.add_pod(added)
    assert [ref.plain(pi.pod) for pi in cache.dump().nodes[N1].pods] == [added]


def test_confirm_on_another_node_moves_resources():
    cache = Cache(ttl=0)
    cache.add_node(b.node(N1))
    cache.add_node(b.node(N2))
    assumed = b.pod("p", N1, cpu="100m", memory="500", ports=[b.port(80)])
    added = b.on_node(assumed, N2)
    updated = b.new_version(added, cpu="200m")
    cache.assume_pod(assumed)
    cache.finish_binding(assumed, now=100.0)
    cache.add_pod(added)
    cache.update_pod(added, updated)
    d = cache.dump()
    assert list(d.nodes[N1].pods) == []
    assert d.nodes[N1].requested.milli_cpu == 0
    assert len(d.nodes[N1].used_ports) == 0
    assert [ref.plain(pi.pod) for pi in d.nodes[N2].pods] == [updated]
    assert d.nodes[N2].requested.milli_cpu == 200
    assert d.nodes[N2].used_ports.check_conflict("", "", 80)


def test_update_node_brings_back_a_node_removed_while_pods_remained():
    """update_node adds a node that is not cached, also over a NodeInfo left without
    a node: it is back in the tree and in snapshots (in node_tree.list() order)."""
    from schedcache import Snapshot

    cache = Cache(ttl=0)
    n1 = b.node(N1, cpu="2", region="r", zone="a")
    n2 = b.node(N2, cpu="2", region="r", zone="b")
    cache.add_node(n1)
    cache.add_node(n2)
    p = b.pod("p", N1, cpu="300m")
    cache.add_pod(p)
    snap = Snapshot()
    cache.update_snapshot(snap)
    cache.remove_node(n1)
    cache.update_snapshot(snap)
    assert set(snap.node_info_map) == {N2}
    n1b = b.node(N1, cpu="4", region="r", zone="a", resource_version="7")
    returned = cache.update_node(n1, n1b)
    assert ref.plain(returned.node) == n1b
    assert returned.requested.milli_cpu == 300
    assert sorted(cache.node_tree.list()) == [N1, N2]
    cache.update_snapshot(snap)
    assert set(snap.node_info_map) == {N1, N2}
    ref.assert_snapshot_consistent(cache, snap)
