"""schedcache benchmark: event rates, incremental snapshots, expiry, memory per pod.

    .venv/bin/python bench/cache_bench.py [--nodes 5000 --pods 150000 --zones 5]

With `--node-memory` only what a node costs: bytes traced a node in the cache and in a
snapshot's copy, the time to update every node and to read every node's Mapping back.

Pods come from simcluster.generate: the JSON a real API server lists,
managedFields included, and enter the cache as a watch worker would feed them
(parsed from wire bytes one at a time). Rates are for one core (one thread).
"""
import argparse
import copy
import gc
import os
import statistics
import sys
import time
import tracemalloc

import orjson

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchkit import line  # noqa: E402
from schedcache import Cache, Snapshot  # noqa: E402
from simcluster.generate import generate_cluster  # noqa: E402


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def bench_memory(nodes, wire) -> float:
    """Resident memory a cache grows by per pod, fed one pod at a time as a watch would."""
    cache = Cache(ttl=30)
    for node in nodes:
        cache.add_node(node)
    gc.collect()
    before = rss_bytes()
    for raw in wire:
        cache.add_pod(orjson.loads(raw))
    gc.collect()
    per_pod = (rss_bytes() - before) / len(wire)
    del cache
    gc.collect()
    return per_pod


def bench_node_memory(nodes):
    """Bytes traced a node in a cache and in a snapshot's copy of it, and the time to
    update the nodes and to read each one's Mapping back (its images thawed too)."""
    def add_all():
        for node in nodes:
            cache.add_node(node)    # the copy it returns dropped: it keeps the image counts

    tracemalloc.start()
    cache = Cache(ttl=0)
    add_all()
    in_cache = tracemalloc.get_traced_memory()[0]
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    in_snapshot = tracemalloc.get_traced_memory()[0] - in_cache
    tracemalloc.stop()
    copies = list(snapshot.node_info_map.values())
    gc.disable()        # the generated pods' heap would make the collector's passes the figure
    try:
        added = min(timed(add_all)[0] for _ in range(3))         # untraced: updates now
        read = min(timed(lambda: [info.node for info in copies])[0] for _ in range(3))
    finally:
        gc.enable()
    images = sum(len(node["status"].get("images") or ()) for node in nodes) / len(nodes)
    line(f"a node in the cache ({images:.1f} images a node), traced",
         f"{in_cache / len(nodes):>10,.0f} B")
    line("a node in a snapshot's copy, traced", f"{in_snapshot / len(nodes):>10,.0f} B")
    line("update every node, a node (best of 3, collector off)",
         f"{added / len(nodes) * 1e6:>10.1f} us")
    line("read every node's Mapping, a node (the same)", f"{read / len(nodes) * 1e6:>10.1f} us")


def bench_events(cluster):
    wire = [orjson.dumps(p) for p in cluster.pods if p["spec"].get("nodeName")]
    nodes = cluster.nodes
    del cluster
    gc.collect()
    cache = Cache(ttl=30)
    for node in nodes:
        cache.add_node(node)
    per_pod = bench_memory(nodes, wire)
    gc.collect()
    gc.freeze()  # what the owner does after its first sync: the GC skips the settled heap
    add = cache.add_pod
    add_seconds = parse_seconds = 0.0
    for start in range(0, len(wire), 10000):
        parsed_at = time.perf_counter()
        chunk = [orjson.loads(raw) for raw in wire[start:start + 10000]]
        added_at = time.perf_counter()
        for pod in chunk:
            add(pod)
        add_seconds += time.perf_counter() - added_at
        parse_seconds += added_at - parsed_at
        del chunk
    n = len(wire)
    print(f"pod events ({n} pods on {len(nodes)} nodes, ~{sum(map(len, wire)) // n} B of JSON each)")
    line("orjson parse of the wire bytes (for scale, not the cache)", f"{n / parse_seconds:>10,.0f} /s")
    line("add_pod", f"{n / add_seconds:>10,.0f} /s")

    sample = [orjson.loads(raw) for raw in wire[: min(n // 5, 30000)]]
    updated = []
    for pod in sample:
        new = copy.copy(pod)
        new["metadata"] = dict(pod["metadata"], resourceVersion=str(10**9 + len(updated)))
        updated.append(new)
    seconds, _ = timed(lambda: [cache.update_pod(o, u) for o, u in zip(sample, updated)])
    line("update_pod", f"{len(sample) / seconds:>10,.0f} /s")
    seconds, _ = timed(lambda: [cache.remove_pod(p) for p in updated])
    line("remove_pod", f"{len(updated) / seconds:>10,.0f} /s")
    for pod in sample:
        pod["metadata"]["uid"] = "assumed-" + pod["metadata"]["uid"]
    seconds, _ = timed(lambda: [cache.assume_pod(p) for p in sample])
    line("assume_pod", f"{len(sample) / seconds:>10,.0f} /s")
    seconds, _ = timed(lambda: [cache.finish_binding(p, now=1000.0) for p in sample])
    line("finish_binding", f"{len(sample) / seconds:>10,.0f} /s")
    seconds, _ = timed(lambda: [cache.forget_pod(p) for p in sample])
    line("forget_pod", f"{len(sample) / seconds:>10,.0f} /s")
    for pod in sample:                       # the removed pods come back: nodes full again
        pod["metadata"]["uid"] = pod["metadata"]["uid"][len("assumed-"):]
        cache.add_pod(pod)
    print("memory")
    line("resident memory per cached pod", f"{per_pod:>10,.0f} B")
    return cache, nodes


def bench_snapshot(cache, nodes):
    print(f"update_snapshot ({cache.node_count()} nodes, {cache.pod_count()} pods)")
    full = []
    for _ in range(5):
        seconds, snap = timed(lambda: _fresh_snapshot(cache))
        full.append(seconds)
    snapshot = _fresh_snapshot(cache)
    changed = max(1, len(nodes) // 100)
    busy = [n for n in nodes if cache.node_info(n["metadata"]["name"]).pods]
    incremental = []
    for round_ in range(5):
        for node in busy[round_ * changed:(round_ + 1) * changed]:
            info = cache.node_info(node["metadata"]["name"])
            pod = info.pods[0].pod
            new = dict(pod, metadata=dict(pod["metadata"], resourceVersion=f"r{round_}"))
            cache.update_pod(pod, new)
        incremental.append(timed(lambda: cache.update_snapshot(snapshot))[0])
    full_s, inc_s = statistics.median(full), statistics.median(incremental)
    line("full rebuild into an empty Snapshot", f"{full_s * 1e3:>10.2f} ms")
    line(f"incremental after {changed} nodes (1%) changed", f"{inc_s * 1e3:>10.3f} ms")
    line("ratio full / incremental", f"{full_s / inc_s:>10.0f} x")


def _fresh_snapshot(cache):
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    return snapshot


def bench_cleanup(nodes):
    print("cleanup_assumed_pods over 10,000 assumed pods")
    def setup():
        cache = Cache(ttl=30)
        for node in nodes[:1000]:
            cache.add_node(node)
        for i in range(10000):
            pod = {"metadata": {"uid": f"a{i}", "name": f"a{i}", "namespace": "bench"},
                   "spec": {"nodeName": nodes[i // 10 % len(nodes)]["metadata"]["name"],
                            "containers": [{"name": "c", "resources": {"requests": {
                                "cpu": "100m", "memory": "64Mi"}}}]}}
            cache.assume_pod(pod)
            cache.finish_binding(pod, now=1000.0)
        return cache
    cache = setup()
    line("none due (scan only)", f"{timed(lambda: cache.cleanup_assumed_pods(now=1010.0))[0] * 1e3:>10.2f} ms")
    cache = setup()
    seconds, expired = timed(lambda: cache.cleanup_assumed_pods(now=1031.0))
    assert len(expired) == 10000
    line("all 10,000 expire", f"{seconds * 1e3:>10.2f} ms")


def bench_upstream():
    """BenchmarkUpdate1kNodes30kPods: full UpdateSnapshot of 1,000 nodes x 30 pods."""
    cache = Cache(ttl=1)
    for i in range(1000):
        name = f"node-{i}"
        cache.add_node({"metadata": {"name": name}})
        for j in range(30):
            cache.add_pod({"metadata": {"uid": f"{name}-pod-{j}", "name": f"{name}-pod-{j}",
                                        "namespace": "node_info_cache_test"},
                           "spec": {"nodeName": name, "containers": [
                               {"resources": {"requests": {"cpu": "0", "memory": "0"}}}]}})
    runs = [timed(lambda: _fresh_snapshot(cache))[0] for _ in range(50)]
    print("upstream BenchmarkUpdate1kNodes30kPods (Go: about 2 ms here)")
    line("full update_snapshot into an empty Snapshot, median of 50", f"{statistics.median(runs) * 1e3:>10.2f} ms")
    line("best of 50", f"{min(runs) * 1e3:>10.2f} ms")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=150000)
    parser.add_argument("--zones", type=int, default=5)
    parser.add_argument("--node-memory", action="store_true",
                        help="only what a node costs (bench_node_memory)")
    args = parser.parse_args()
    seconds, cluster = timed(lambda: generate_cluster(nodes=args.nodes, pods=args.pods,
                                                      zones=args.zones, seed=1))
    print(f"generated {len(cluster.nodes)} nodes / {len(cluster.pods)} pods in {seconds:.1f} s "
          f"(python {sys.version.split()[0]})")
    if args.node_memory:
        bench_node_memory(orjson.loads(orjson.dumps(cluster.nodes)))   # as parsed off the wire
        return
    cache, nodes = bench_events(cluster)
    bench_snapshot(cache, nodes)
    bench_cleanup(nodes)
    bench_upstream()


if __name__ == "__main__":
    main()
