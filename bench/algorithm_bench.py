"""scheduling benchmark: DefaultAlgorithm.schedule() over a large cluster, every node suggested.

    .venv/bin/python bench/algorithm_bench.py [--nodes 5000 --pods 150000 --zones 5 --runs 200]

The cache holds the generated cluster's bound pods (those with spec.nodeName).
Each timed call is schedule(pod, all node names): a snapshot update, the
filter in the zone round robin's order up to the first feasible node (every
node for a pod that fits nowhere) and, for such a pod, preemption. Nothing is
bound between calls, so every call filters the same cluster. The filter pass
over every node (no early stop) is timed apart. Target: p99 under 20 ms.
"""
import gc
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.benchkit import cluster_arguments, loaded_cache, percentile  # noqa: E402
from scheduling import DefaultAlgorithm  # noqa: E402
from scheduling.podview import PodView  # noqa: E402
from simcluster.generate import make_pod  # noqa: E402

GPU = "nvidia.com/gpu"


def shapes():
    """Pending pods of varied shapes: (label, pod)."""
    zone_terms = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-b"]},
            {"key": "kubernetes.io/hostname", "operator": "Exists"}]}]}}}
    return [
        ("small cpu/memory", make_pod("small", requests={"cpu": "250m", "memory": "256Mi"})),
        ("no requests", make_pod("besteffort")),
        ("init + overhead", make_pod("init", requests={"cpu": "500m", "memory": "1Gi"},
                                     init_containers=[{"name": "i", "image": "busybox",
                                                       "resources": {"requests": {"cpu": "2"}}}],
                                     overhead={"cpu": "100m", "memory": "64Mi"})),
        ("host port 8080", make_pod("ported", requests={"cpu": "100m"}, host_ports=[8080])),
        ("node selector", make_pod("selected", requests={"cpu": "100m"},
                                   node_selector={"kubernetes.io/os": "linux"})),
        ("zone affinity", make_pod("zoned", requests={"cpu": "100m"}, affinity=zone_terms)),
        ("tolerates all", make_pod("tolerant", requests={"cpu": "100m"},
                                   tolerations=[{"operator": "Exists"}])),
        ("1 GPU", make_pod("gpu", requests={"cpu": "1", GPU: "1"},
                           tolerations=[{"key": GPU, "operator": "Exists",
                                         "effect": "NoSchedule"}])),
        ("too big: wait", make_pod("huge", requests={"cpu": "500"}, priority=0)),
        ("large, priority 1e6: preempt", make_pod("vip", requests={"cpu": "31", "memory": "200Gi"},
                                                  priority=1_000_000)),
    ]


def main():
    args = cluster_arguments("DefaultAlgorithm.schedule() over a large cluster", runs=200)
    cache, names = loaded_cache(args)

    algorithm = DefaultAlgorithm(cache)
    first = time.perf_counter()
    algorithm.refresh()
    print(f"first refresh (snapshot + {len(names)} node records): "
          f"{(time.perf_counter() - first) * 1e3:.0f} ms")

    all_samples = []
    shapes_list = shapes()
    gc.disable()   # the cluster's objects are long-lived; a full collection is not the filter's
    try:
        print(f"  {'shape':<30} {'result':<8} {'feasible':>8} {'p50 ms':>8} {'p99 ms':>8}")
        for label, pod in shapes_list:
            algorithm.schedule(pod, names)   # warm
            samples = []
            for _ in range(args.runs):
                t = time.perf_counter()
                result = algorithm.schedule(pod, names)
                samples.append((time.perf_counter() - t) * 1e3)
            all_samples.extend(samples)
            feasible = algorithm.filter(PodView(pod), names, every_node=True).feasible
            print(f"  {label:<30} {result.kind:<8} {feasible:>8} "
                  f"{statistics.median(samples):>8.2f} {percentile(samples, 0.99):>8.2f}")
    finally:
        gc.enable()
    filter_samples = []
    gc.disable()
    try:
        for _ in range(args.runs):
            for _, pod in shapes_list:
                view = PodView(pod)
                t = time.perf_counter()
                algorithm.filter(view, names, every_node=True)
                filter_samples.append((time.perf_counter() - t) * 1e3)
    finally:
        gc.enable()
    print(f"filter pass over every node, no early stop (every shape, {len(names)} nodes): "
          f"p50 {statistics.median(filter_samples):.2f} ms, "
          f"p99 {percentile(filter_samples, 0.99):.2f} ms over {len(filter_samples)} calls")
    print(f"schedule(), all shapes: p50 {statistics.median(all_samples):.2f} ms, "
          f"p99 {percentile(all_samples, 0.99):.2f} ms over {len(all_samples)} calls")


if __name__ == "__main__":
    main()
