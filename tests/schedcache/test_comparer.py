"""The comparer: every kind of drift between the cache and the listed cluster, and none
when they agree."""
from schedcache import Cache, compare

import tests.schedcache.builders as b

N1, N2 = "node-1", "node-2"


def bound(name, node, rv="1", phase="Running", **kw):
    p = b.pod(name, node, cpu="100m", resource_version=rv, **kw)
    p["status"]["phase"] = phase
    return p


def agreeing_cluster():
    nodes = [b.node(N1, cpu="4", memory="8Gi", pods="110"), b.node(N2, cpu="4", memory="8Gi", pods="110")]
    pods = [bound("a", N1), bound("b", N2)]
    cache = Cache(ttl=30)
    for n in nodes:
        cache.add_node(n)
    for p in pods:
        cache.add_pod(p)
    return cache, nodes, pods


def test_agreeing_cache_is_clean():
    cache, nodes, pods = agreeing_cluster()
    report = compare(cache, nodes, pods)
    assert report.clean
    assert report.as_dict()["clean"] is True


def test_missed_and_redundant_pods():
    cache, nodes, pods = agreeing_cluster()
    extra = bound("c", N1)
    cache.remove_pod(pods[1])                    # the cache missed b
    cache.add_pod(extra)                          # and holds c, gone from the cluster
    report = compare(cache, nodes, pods)
    assert report.missed_pods == [b.uid_of(pods[1])]
    assert report.redundant_pods == [b.uid_of(extra)]
    assert not report.clean


def test_terminated_pods_are_not_expected_in_the_cache():
    cache, nodes, pods = agreeing_cluster()
    done = bound("done", N1, phase="Succeeded")
    assert compare(cache, nodes, pods + [done]).clean


def test_pending_pods_held_by_the_scheduler_are_neither_missed_nor_redundant():
    cache, nodes, pods = agreeing_cluster()
    queued = bound("q", N2)
    cache.add_pod(queued)
    assert compare(cache, nodes, pods).redundant_pods == [b.uid_of(queued)]
    assert compare(cache, nodes, pods, pending_pods=[queued]).clean
    unknown = bound("u", N1)
    assert compare(cache, nodes, pods + [unknown], pending_pods=[unknown, queued]).clean


def test_pod_on_a_different_node_and_stale_pod():
    cache, nodes, pods = agreeing_cluster()
    moved = b.on_node(pods[0], N2)
    newer = b.new_version(pods[1])
    report = compare(cache, nodes, [moved, newer])
    assert report.wrong_node_pods == [(b.uid_of(pods[0]), N1, N2)]
    assert report.stale_pods == [(b.uid_of(pods[1]), "1", "2")]


def test_a_cached_pod_the_cluster_lists_finished_or_unbound_is_redundant():
    cache, nodes, pods = agreeing_cluster()
    finished, unbound = bound("f", N1), bound("u", N2)
    cache.add_pod(finished)
    cache.add_pod(unbound)
    listed = pods + [bound("f", N1, phase="Succeeded"), b.pod("u", None)]
    report = compare(cache, nodes, listed)
    assert report.redundant_pods == sorted([b.uid_of(finished), b.uid_of(unbound)])
    assert compare(cache, nodes, listed, pending_pods=[unbound]).redundant_pods == [
        b.uid_of(finished)]


def test_the_lists_are_read_once_as_they_come():
    """The owner hands its lists over as iterators of marshalled pages (decoder.py): a
    comparison that read them twice would find every cached pod redundant."""
    cache, nodes, pods = agreeing_cluster()
    cache.add_pod(bound("gone", N1))
    listed = [b.on_node(pods[0], N2), b.new_version(pods[1]), bound("missed", N1)]
    report = compare(cache, iter(nodes), iter(listed))
    assert report.as_dict() == compare(cache, nodes, listed).as_dict()
    assert (report.wrong_node_pods, report.stale_pods, report.missed_pods,
            report.redundant_pods) == ([(b.uid_of(pods[0]), N1, N2)],
                                       [(b.uid_of(pods[1]), "1", "2")],
                                       [b.uid_of(listed[2])],
                                       [b.uid_of(bound("gone", N1))])


def test_assumed_pod_not_yet_bound_in_the_cluster_is_a_state_not_drift():
    cache, nodes, pods = agreeing_cluster()
    assumed = bound("s", N1)
    cache.assume_pod(assumed)
    unbound = b.pod("s", None)
    report = compare(cache, nodes, pods + [unbound])
    assert report.unconfirmed_assumed == [b.uid_of(assumed)]
    assert report.clean
    assert compare(cache, nodes, pods).redundant_pods == [b.uid_of(assumed)]


def test_missed_redundant_stale_and_ghost_nodes():
    cache, nodes, pods = agreeing_cluster()
    cache.remove_node(nodes[1])                  # N2 gone from the cache, its pod stays: a ghost
    cache.add_node(b.node("node-3", cpu="1"))    # and node-3 is not in the cluster
    newer = b.node(N1, cpu="4", memory="8Gi", pods="110", resource_version="9")
    report = compare(cache, [newer, nodes[1]], pods)
    assert report.ghost_nodes == [(N2, 1)]
    assert report.missed_nodes == [N2]
    assert report.redundant_nodes == ["node-3"]
    assert report.stale_nodes == [(N1, "1", "9")]


def test_allocatable_differing_at_the_same_resource_version():
    cache, nodes, pods = agreeing_cluster()
    changed = b.node(N1, cpu="8", memory="8Gi", pods="110")
    report = compare(cache, [changed, nodes[1]], pods)
    assert [(m[0], m[1]) for m in report.aggregate_mismatches] == [(N1, "allocatable")]


def test_aggregates_that_differ_from_a_recomputation_are_reported():
    cache, nodes, pods = agreeing_cluster()
    info = cache._nodes[N1]                       # corrupt the aggregate behind the cache's back
    info._writable().requested = info._s.requested + info._s.requested
    report = compare(cache, nodes, pods)
    assert [(m[0], m[1]) for m in report.aggregate_mismatches] == [(N1, "requested")]
    assert not report.clean
