"""What a comparison's repair costs against a relist: a GET a pod against a listed pod.

    .venv/bin/python bench/repair_bench.py [--nodes 1000 --pods 30000 --gets 2000 --runs 2]

The simulated cluster runs in its own process. In this one, as in the decoder process
(its collector off): every pod listed in pages of 500 and digested, then `--gets` of them
fetched one at a time by the repair's own code (`decoder._fetch`, `decoder.repaired`).
Prints wall and this process's CPU per pod for both, and their ratio: where
drift_repair.REPAIR_SHARE stops fetching and relists.
"""
import argparse
import gc
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

from benchkit import core_api, line, served_cluster  # noqa: E402


def cpu() -> float:
    times = os.times()
    return times.user + times.system


def listed(api, digest_pod, read_json) -> tuple[list, float, float]:
    """Every pod's (namespace, name, uid), and the wall and CPU seconds the list took."""
    started, used = time.monotonic(), cpu()
    keys, token = [], None
    while True:
        page = read_json(api.list_pod_for_all_namespaces(limit=500, _continue=token,
                                                         _preload_content=False))
        for pod in page["items"]:
            digest_pod(pod)
            meta = pod["metadata"]
            keys.append((meta["namespace"], meta["name"], meta["uid"]))
        token = page["metadata"].get("continue")
        if not token:
            return keys, time.monotonic() - started, cpu() - used


def fetched(api, keys, decoder) -> tuple[float, float]:
    started, used = time.monotonic(), cpu()
    for key in keys:
        decoder.repaired("pods", key, decoder._fetch(api, "pods", key), decoder.digest_pod)
    return time.monotonic() - started, cpu() - used


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=30000)
    parser.add_argument("--gets", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    import django
    django.setup()
    from dashboard.kube.client import read_json
    from dashboard.owner import decoder

    gc.disable()      # as the decoder process runs
    with served_cluster(args.nodes, args.pods) as (_, kubeconfig):
        api = core_api(kubeconfig)
        for run in range(1, args.runs + 1):
            keys, list_wall, list_cpu = listed(api, decoder.digest_pod, read_json)
            sample = keys[::max(1, len(keys) // args.gets)][:args.gets]
            get_wall, get_cpu = fetched(api, sample, decoder)
            per_list = (list_wall / len(keys), list_cpu / len(keys))
            per_get = (get_wall / len(sample), get_cpu / len(sample))
            line(f"run {run}: listed {len(keys)} pods, a pod (wall / CPU)",
                 f"{per_list[0] * 1e6:.0f} / {per_list[1] * 1e6:.0f} us")
            line(f"run {run}: fetched {len(sample)} pods, a pod (wall / CPU)",
                 f"{per_get[0] * 1e6:.0f} / {per_get[1] * 1e6:.0f} us")
            line(f"run {run}: a GET costs listed pods (wall / CPU)",
                 f"{per_get[0] / per_list[0]:.1f} / {per_get[1] / per_list[1]:.1f}")


if __name__ == "__main__":
    main()
