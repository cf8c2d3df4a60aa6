"""What the stand-in's view holds a pod: a generated cluster fed to a ClusterView as its
reflectors feed it (each object parsed from its JSON, digested, applied), traced by
tracemalloc from the first node on; prints the traced bytes a pod and the lines that hold
the most. No process, no HTTP: the view's own holdings, comparable across trees (run each
tree's copy of this script in one sitting). Figures are printed, nothing asserted.

Then, traced apart, what a diagnosis adds at its first pod with inter-pod affinity terms:
the index of the placed pods' groups (scheduling/podaffinity.PlacedPods) with the pending
pods' required terms looked up in it, as their diagnoses would.

    .venv/bin/python bench/standin_view_memory.py [--nodes 3000] [--pods 90000] [--lines 12]
"""
import argparse
import gc
import os
import sys
import tracemalloc
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

import orjson  # noqa: E402

from simcluster.generate import generate_cluster  # noqa: E402

from scheduling.podaffinity import PlacedPods, own_terms  # noqa: E402

from dashboard.standin.standin_view import ClusterView, kept, node_filtered  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=3000)
    parser.add_argument("--pods", type=int, default=90000)
    parser.add_argument("--lines", type=int, default=12)
    args = parser.parse_args()
    cluster = generate_cluster(args.nodes, args.pods, zones=5, pending_fraction=0.02)
    nodes, pods = list(map(orjson.dumps, cluster.nodes)), list(map(orjson.dumps, cluster.pods))
    del cluster
    gc.collect()
    # reflectors that are never started
    view = ClusterView(SimpleNamespace(list_node=None, list_pod_for_all_namespaces=None,
                                       list_persistent_volume_claim_for_all_namespaces=None))
    tracemalloc.start()
    for node in nodes:
        view._node_event("ADDED", node_filtered(orjson.loads(node)))
    for pod in pods:
        view._put_pod(kept(orjson.loads(pod)))
    view.algorithm.refresh()
    gc.collect()
    stats = tracemalloc.take_snapshot().statistics("lineno")
    total = sum(s.size for s in stats)
    print(f"{args.nodes:,} nodes, {len(pods):,} pods ({view.cache.pod_count():,} placed, "
          f"{len(view.pending):,} pending): {total:,} bytes traced, {total / len(pods):,.0f} "
          "a pod")
    for stat in stats[:args.lines]:
        print(f"{stat.size / len(pods):>8,.0f} B a pod  {stat.traceback[0]}")
    tracemalloc.stop()
    terms = [term for pod in (pending.thaw() for pending in view.pending.values())
             for kind in own_terms(pod["spec"], pod["metadata"].get("namespace", ""))
             for term in kind]
    tracemalloc.start()
    placed = PlacedPods()
    placed.refresh(view.algorithm.records, terms=terms)
    for term in terms:
        placed.candidates(term)
    gc.collect()
    held = sum(s.size for s in tracemalloc.take_snapshot().statistics("filename"))
    print(f"inter-pod affinity's index: {held:,} bytes traced, {held / len(pods):,.0f} a pod "
          f"({len(placed.groups):,} groups, {len(placed.by_label):,} label pairs, "
          f"{len(terms):,} terms of pending pods looked up)")


if __name__ == "__main__":
    main()
