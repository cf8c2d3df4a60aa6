"""Properties that need no reference model: copies handed out are independent of the
cache (both ways), refused operations leave the cache exactly as it was, and the one
lock keeps concurrent callers consistent."""

import threading

import pytest

from schedcache import Cache, CacheCorruptedError, CacheError, Snapshot

import tests.schedcache.builders as b
import tests.schedcache.reference as ref

N1, N2, N3 = "node-1", "node-2", "node-3"
T0 = 1_000_000.0


def rich_cache():
    """A cache with a bit of everything: images, ports, PVCs, affinity, assumed pods with
    and without finished binding, a pod on an unknown node, a removed node with pods."""
    c = Cache(ttl=30)
    n1 = b.node(N1, cpu="4", memory="8Gi", region="r1", zone="a", images=[("img/a:1", 100), ("img/b:1", 200)])
    n2 = b.node(N2, cpu="2", memory="4Gi", region="r1", zone="b", images=[("img/a:1", 100)], scalars={"nvidia.com/gpu": "2"})
    n3 = b.node(N3, cpu="1", memory="1Gi")
    for n in (n1, n2, n3):
        c.add_node(n)
    pods = {
        "web": b.pod("web", N1, cpu="100m", memory="64Mi", ports=[b.port(80)], labels={"app": "web"}, affinity=b.pod_anti_affinity_required()),
        "db": b.pod("db", N1, cpu="1", memory="1Gi", pvcs=["data"], labels={"app": "db"}),
        "gpu": b.pod("gpu", N2, extra={"nvidia.com/gpu": "1"}, ports=[b.port(9000, "10.0.0.1", "UDP")]),
        "assumed": b.pod("assumed", N2, cpu="200m", affinity=b.pod_affinity_required()),
        "binding": b.pod("binding", N1, cpu="300m"),
        "orphan": b.pod("orphan", "node-unknown", cpu="50m"),
        "ghost": b.pod("ghost", N3, cpu="10m", pvcs=["g"]),
    }
    for k in ("web", "db", "gpu", "orphan", "ghost"):
        c.add_pod(pods[k])
    c.assume_pod(pods["assumed"])
    c.finish_binding(pods["assumed"], now=T0)
    c.assume_pod(pods["binding"])
    c.remove_node(n3)
    return c, {"n1": n1, "n2": n2, "n3": n3}, pods


# ----------------------------------------------------------------- refusals


def refusals(nodes, pods):
    other = lambda p, n: b.on_node(p, n)  # noqa: E731
    return [
        ("assume an added pod", lambda c: c.assume_pod(pods["web"]), CacheError),
        ("assume an assumed pod", lambda c: c.assume_pod(pods["assumed"]), CacheError),
        ("add an added pod", lambda c: c.add_pod(pods["db"]), CacheError),
        ("forget an added pod", lambda c: c.forget_pod(pods["db"]), CacheError),
        ("forget an assumed pod on another node", lambda c: c.forget_pod(other(pods["assumed"], N1)), CacheError),
        ("update an assumed pod", lambda c: c.update_pod(pods["assumed"], b.new_version(pods["assumed"])), CacheError),
        ("update an unknown pod", lambda c: c.update_pod(b.pod("nope", N1), b.pod("nope", N1)), CacheError),
        ("update onto another node", lambda c: c.update_pod(pods["web"], other(b.new_version(pods["web"]), N2)), CacheCorruptedError),
        ("update the orphan onto a node", lambda c: c.update_pod(pods["orphan"], other(pods["orphan"], N1)), CacheCorruptedError),
        ("remove an unknown pod", lambda c: c.remove_pod(b.pod("nope", N1)), CacheError),
        ("remove naming another node", lambda c: c.remove_pod(other(pods["db"], N2)), CacheCorruptedError),
        ("remove an assumed pod naming another node", lambda c: c.remove_pod(other(pods["binding"], N2)), CacheCorruptedError),
        ("remove an unknown node", lambda c: c.remove_node(b.node("node-9")), CacheError),
        ("remove a removed node", lambda c: c.remove_node(nodes["n3"]), CacheError),
        ("get an unknown pod", lambda c: c.get_pod(b.pod("nope", N1)), CacheError),
        ("pod without uid", lambda c: c.add_pod(b.pod("x", N1, no_uid=True)), CacheError),
        ("assume without uid", lambda c: c.assume_pod(b.pod("x", N1, no_uid=True)), CacheError),
        ("malformed selector", lambda c: c.list_pods("app in (web"), ValueError),
        ("node with a malformed image", lambda c: c.update_node(nodes["n1"], _with_images(
            nodes["n1"], [{"names": ["img/a:1"], "sizeBytes": 100}, {"names": ["img/z:1"],
                                                                  "sizeBytes": "big"}])),
         CacheError),
    ]


def _with_images(node, images):
    return {**node, "status": {**node["status"], "images": images}}


REFUSAL_IDS = [r[0] for r in refusals({}, {})]  # the lambdas are not called here


@pytest.mark.parametrize("idx", range(len(REFUSAL_IDS)), ids=REFUSAL_IDS)
def test_refused_operation_leaves_everything_unchanged(idx):
    cache, nodes, pods = rich_cache()
    _, call, exc = refusals(nodes, pods)[idx]
    ref.assert_refused(cache, lambda: call(cache), exc, probe_pods=list(pods.values()))


@pytest.mark.parametrize("idx", range(len(REFUSAL_IDS)), ids=REFUSAL_IDS)
def test_refused_operation_leaves_snapshot_updates_empty(idx):
    """After a refusal, updating a snapshot copies nothing: no generation moved."""
    cache, nodes, pods = rich_cache()
    snap = Snapshot()
    cache.update_snapshot(snap)
    before = {n: ni for n, ni in snap.node_info_map.items()}
    gen = snap.generation
    _, call, exc = refusals(nodes, pods)[idx]
    with pytest.raises(exc):
        call(cache)
    cache.update_snapshot(snap)
    assert snap.generation == gen
    for n, ni in snap.node_info_map.items():
        assert ni is before[n]


def test_cache_usable_after_every_refusal_in_a_row():
    cache, nodes, pods = rich_cache()
    for _, call, exc in refusals(nodes, pods):
        with pytest.raises(exc):
            call(cache)
    # ordinary life goes on
    cache.add_pod(pods["binding"])  # confirm
    cache.remove_pod(pods["ghost"])
    cache.remove_pod(pods["orphan"])
    d = cache.dump()
    assert set(d.nodes) == {N1, N2}
    assert set(d.assumed_pods) == {ref.uid(pods["assumed"])}
    assert cache.pod_count() == 5
    snap = Snapshot()
    cache.update_snapshot(snap)
    ref.assert_snapshot_consistent(cache, snap)


# ------------------------------------------------------------------- copies


def mutate(ni):
    """Scribble over every part of a NodeInfo copy that can be scribbled over; frozen
    parts (an equally valid way to be independent) are skipped."""

    def attempt(f):
        try:
            f()
        except (AttributeError, TypeError):
            pass

    for r in (ni.requested, ni.non_zero_requested, ni.allocatable):
        attempt(lambda r=r: setattr(r, "milli_cpu", 123456789))
        attempt(lambda r=r: setattr(r, "memory", 1))
        attempt(lambda r=r: setattr(r, "ephemeral_storage", 7))
        attempt(lambda r=r: r.scalar_resources.__setitem__("scribble.io/x", 99))
        attempt(lambda r=r: r.scalar_resources.clear())
    for attr in ("pods", "pods_with_affinity", "pods_with_required_anti_affinity"):
        seq = getattr(ni, attr)
        attempt(lambda seq=seq: seq.append(seq[0]) if len(seq) else None)
        attempt(lambda seq=seq: seq.clear())
    attempt(lambda: ni.pvc_ref_counts.__setitem__("scribble/x", 5))
    attempt(lambda: ni.pvc_ref_counts.clear())
    attempt(lambda: ni.image_states.clear())
    attempt(lambda: setattr(ni, "generation", -1))
    attempt(lambda: setattr(ni, "requested", None))


def handed_out(cache, nodes):
    """Every way the API hands out NodeInfo copies."""
    snap = Snapshot()
    cache.update_snapshot(snap)
    info_map = {}
    cache.update_node_name_to_info_map(info_map)
    return {
        "dump": list(cache.dump().nodes.values()),
        "get_node_name_to_info_map": list(cache.get_node_name_to_info_map().values()),
        "update_node_name_to_info_map": list(info_map.values()),
        "snapshot map": list(snap.node_info_map.values()),
        "snapshot list": list(snap.node_info_list),
        "add_node": [cache.add_node(b.node("node-new", cpu="1"))],
        "update_node": [cache.update_node(nodes["n1"], nodes["n1"])],
    }


KINDS = ["dump", "get_node_name_to_info_map", "update_node_name_to_info_map", "snapshot map", "snapshot list", "add_node", "update_node"]


@pytest.mark.parametrize("kind", KINDS)
def test_mutating_a_copy_does_not_change_the_cache(kind):
    cache, nodes, pods = rich_cache()
    infos = handed_out(cache, nodes)[kind]
    before = ref.dump_view(cache, pods.values())
    for ni in infos:
        mutate(ni)
    assert ref.dump_view(cache, pods.values()) == before
    snap = Snapshot()
    cache.update_snapshot(snap)
    ref.assert_snapshot_consistent(cache, snap)


@pytest.mark.parametrize("kind", KINDS)
def test_later_cache_changes_do_not_change_a_held_copy(kind):
    cache, nodes, pods = rich_cache()
    infos = handed_out(cache, nodes)[kind]
    held = [ref.info_view(ni) for ni in infos]
    cache.add_pod(pods["binding"])
    cache.update_pod(pods["web"], b.new_version(pods["web"], cpu="3"))
    cache.remove_pod(pods["db"])
    cache.add_pod(b.pod("late", N1, cpu="1", ports=[b.port(8080)], pvcs=["late"], affinity=b.pod_affinity_required()))
    cache.update_node(nodes["n1"], b.node(N1, cpu="64", images=[("img/c:1", 5)], resource_version="9"))
    cache.remove_node(nodes["n2"])
    cache.add_node(b.node("node-other", images=[("img/a:1", 100)]))
    cache.cleanup_assumed_pods(now=T0 + 1000)
    assert [ref.info_view(ni) for ni in infos] == held


def test_dump_copies_of_two_calls_are_distinct_objects():
    cache, _, _ = rich_cache()
    d1, d2 = cache.dump(), cache.dump()
    for name in d1.nodes:
        assert d1.nodes[name] is not d2.nodes[name]
        assert ref.info_view(d1.nodes[name]) == ref.info_view(d2.nodes[name])


# ----------------------------------------------------------------- one lock


def test_concurrent_callers_leave_consistent_aggregates():
    cache = Cache(ttl=0)
    nodes = [b.node("n%d" % i, cpu="64") for i in range(3)]
    for n in nodes:
        cache.add_node(n)
    errors = []

    def worker(w):
        try:
            kept = []
            for i in range(60):
                p = b.pod("w%d-p%d" % (w, i), "n%d" % (i % 3), cpu="%dm" % (i + 1), ports=[b.port(10000 + w * 100 + i)])
                if i % 4 == 0:
                    cache.assume_pod(p)
                    cache.forget_pod(p)
                else:
                    cache.add_pod(p)
                    if i % 3 == 0:
                        cache.remove_pod(p)
                    else:
                        kept.append(p)
                cache.list_pods("app!=x")
                cache.update_snapshot(Snapshot())
            results[w] = kept
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    results = {}
    threads = [threading.Thread(target=worker, args=(w,)) for w in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    kept = [p for w in sorted(results) for p in results[w]]
    assert cache.pod_count() == len(kept)
    d = cache.dump()
    for n in nodes:
        name = n["metadata"]["name"]
        want = ref.expected_info(n, [p for p in kept if p["spec"]["nodeName"] == name], nodes)
        assert ref.without(ref.info_view(d.nodes[name]), "generation") == want
    gens = [ni.generation for ni in d.nodes.values()]
    assert len(set(gens)) == len(gens)


def test_node_infos_after_pages_every_node_info_by_name_as_copies():
    """A dump a page at a time: the pages, in name order, hold every NodeInfo once (the
    removed node that keeps its pod and the unknown node a pod names included), and are
    copies like dump()'s."""
    c, _, pods = rich_cache()
    pages, after = [], ""
    while page := c.node_infos_after(after, 2):
        pages.append([info.name for info in page])
        after = page[-1].name
    assert pages == [[N1, N2], [N3, "node-unknown"]]
    assert c.node_infos_after("", 10)[2].node is None       # node-3 was removed, its pod stays
    copy = c.node_infos_after(N1, 1)[0]
    c.remove_pod(pods["gpu"])
    assert len(copy.pods) == 2 and len(c.node_info(N2).pods) == 1
