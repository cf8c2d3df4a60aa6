"""diagnosis benchmark: why one pending pod is not running, over a large cluster.

    .venv/bin/python bench/diagnosis_bench.py [--nodes 5000 --pods 150000 --zones 5 --runs 100]

The cache holds the generated cluster's bound pods. Each timed call is what the owner's
`diagnose` command does: bring the diagnosis's records up to date (nothing changed
between calls), run every filter over every node (no early stop: every refusal is
wanted), the preemption's dry run for a pod that fits nowhere, and the answer as a dict
(the JSON the web receives). The shapes are the algorithm benchmark's, with required
pod anti-affinity added (it counts every placed pod). Each shape is timed three ways
(see main): asked again, first of its shape, and the pod page's answer. Target: p99
under 50 ms.
"""
import gc
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.algorithm_bench import shapes  # noqa: E402
from bench.benchkit import cluster_arguments, loaded_cache, percentile  # noqa: E402
from scheduling.diagnosis import Diagnoser  # noqa: E402
from simcluster.generate import make_pod  # noqa: E402


def all_shapes():
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "web"}},
         "topologyKey": "topology.kubernetes.io/zone"}]}}
    return shapes() + [("zone anti-affinity", make_pod("lonely", requests={"cpu": "100m"},
                                                       affinity=anti))]


def main():
    args = cluster_arguments("the diagnosis of one pending pod over a large cluster", runs=100)
    cache, _ = loaded_cache(args)
    diagnoser = Diagnoser(cache)
    first = time.perf_counter()
    diagnoser.diagnose(make_pod("first"))
    print(f"first diagnosis (snapshot, {args.nodes} node records, the placed pods' index): "
          f"{(time.perf_counter() - first) * 1e3:.0f} ms")

    # Three calls a round, for each shape: the REST answer (every node's verdict) with the
    # memo of the refused nodes' amounts emptied first (the first pod of its shape); the
    # same again, from that memo, as when the same pod is asked again and nothing changed;
    # the pod page's answer (no per-node verdicts), memo emptied.
    # The thread's CPU time is kept beside the wall time: on a shared machine the wall
    # time counts the other processes' turns too.
    every = {"rest": [], "first": [], "page": []}
    cpu = {key: [] for key in every}
    gc.disable()   # the cluster's objects are long-lived; a full collection is not the diagnosis's
    try:
        print(f"  {'shape':<30} {'feasible':>8} {'p50 ms':>8} {'p99 ms':>8} {'first p50':>9} "
              f"{'p99':>6} {'page p50':>8} {'p99':>6}  message")
        for label, pod in all_shapes():
            result = diagnoser.diagnose(pod).as_dict()   # warm
            samples = {key: [] for key in every}
            for _ in range(args.runs):
                for key, nodes, memo in (("first", True, False), ("rest", True, True),
                                         ("page", False, False)):
                    if not memo:
                        diagnoser.memos.clear()
                    t, c = time.perf_counter(), time.thread_time()
                    diagnoser.diagnose(pod).as_dict(nodes=nodes)
                    samples[key].append((time.perf_counter() - t) * 1e3)
                    cpu[key].append((time.thread_time() - c) * 1e3)
            for key, values in samples.items():
                every[key].extend(values)
            figures = " ".join(f"{statistics.median(samples[key]):>8.2f} "
                               f"{percentile(samples[key], 0.99):>8.2f}" for key in every)
            print(f"  {label:<30} {len(result['feasible']):>8} {figures}  "
                  f"{result['message'][:50]}")
    finally:
        gc.enable()
    for key, what in (("rest", "REST answer, asked again"), ("first", "REST answer, first of "
                      "its shape"), ("page", "the page's answer (no per-node verdicts)")):
        print(f"diagnosis of one pod over {args.nodes} nodes, all shapes, {what}: "
              f"p50 {statistics.median(every[key]):.2f} ms, p99 "
              f"{percentile(every[key], 0.99):.2f} ms over {len(every[key])} calls "
              f"(target p99 < 50 ms); CPU p50 {statistics.median(cpu[key]):.2f} ms, p99 "
              f"{percentile(cpu[key], 0.99):.2f} ms")

if __name__ == "__main__":
    main()
