"""The first sync under churn against the raw list-and-parse of the same objects.

    .venv/bin/python bench/first_list_bench.py [--nodes 2000 --pods 60000 --churn 200]
        [--compaction-interval 300]

The simulated cluster runs in its own process and churns (`--churn` actions a second,
its default scheduler binding what it creates); its history is compacted every
`--compaction-interval` seconds, as kube-apiserver's (a short one makes continue
tokens expire mid-list: the reflector's one full list then). In the same run:

1. raw list-and-parse: nodes and pods listed in pages of 5,000 over HTTP and each page
   parsed with orjson, nothing kept: the least any sync has to do (taken before and
   after the syncs; the faster is the reference, as the machine's neighbours only
   ever slow a run down);
2. the owner's first sync, as `manage.py watch` makes it: a fresh cache fed by a decoder
   process (reflectors parse and digest, the owner's thread applies), until synced and
   its feed drained; once listing in pages, once through the watch (watch-list);
3. one comparison after the last sync: the time the owner's thread was held by it.

Prints each time, the ratio sync / raw, and the reflectors' counts (lists, full lists
after an expired continue token, watch-lists).
"""
import argparse
import gc
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

import django  # noqa: E402

django.setup()

import orjson  # noqa: E402
from benchkit import cluster_pods, core_api, line, served_cluster, sync  # noqa: E402
from feed_bench import bench_comparison  # noqa: E402
from kubernetes.client.exceptions import ApiException  # noqa: E402

from schedcache import Cache  # noqa: E402

from dashboard.owner.owner import CacheOwner  # noqa: E402
from dashboard.owner.runner import tune_gc  # noqa: E402

PAGE = 5000


def raw_list_and_parse(kubeconfig) -> tuple:
    """(seconds, objects): every node and pod listed in pages and parsed, nothing kept.
    An expired continue token goes on with the remainder's token the 410 carries
    (capture 99): only the parsing's cost matters here."""
    api = core_api(kubeconfig)
    started, objects = time.perf_counter(), 0
    for call in (api.list_node, api.list_pod_for_all_namespaces):
        token = None
        while True:
            kwargs = {"limit": PAGE, **({"_continue": token} if token else {})}
            try:
                response = call(_preload_content=False, **kwargs)
                page = orjson.loads(response.read())
                response.release_conn()
            except ApiException as e:
                if e.status != 410:
                    raise
                token = orjson.loads(e.body)["metadata"]["continue"]
                continue
            objects += len(page["items"])
            token = page["metadata"].get("continue")
            del page
            if not token:
                break
    api.api_client.close()
    return time.perf_counter() - started, objects


def first_sync(kubeconfig, watch_list: bool):
    owner = CacheOwner(Cache(ttl=30))
    stop, seconds, _, decoder = sync(owner, kubeconfig, {"watch_list": watch_list,
                                                         "page_size": PAGE})
    stats = {view.kind: view.stats for view in decoder.reflectors}
    return owner, stop, decoder, seconds, stats


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--pods", type=int, default=60000)
    parser.add_argument("--churn", type=float, default=200.0, help="actions per second")
    parser.add_argument("--compaction-interval", type=float, default=300.0)
    args = parser.parse_args()
    tune_gc()
    started = time.perf_counter()
    with served_cluster(args.nodes, args.pods, "--churn", str(args.churn), "--scheduler",
                        "--compaction-interval", str(args.compaction_interval),
                        "--bookmark-interval", "5") as (url, kubeconfig):
        print(f"simulated cluster {url}: {args.nodes} nodes, {args.pods} pods, "
              f"{args.churn:g} changes/s, compaction every {args.compaction_interval:g} s; "
              f"serving after {time.perf_counter() - started:.0f} s")
        raw_before, objects = raw_list_and_parse(kubeconfig)
        syncs = {}
        for name, watch_list in (("paged list", False), ("watch-list", True)):
            owner, stop, decoder, seconds, stats = first_sync(kubeconfig, watch_list)
            syncs[name] = (seconds, owner.cache.pod_count() + len(owner.pending), stats)
            if watch_list:
                bench_comparison(owner, decoder)
            stop.set()
            decoder.stop()
            del owner, decoder
            gc.unfreeze()     # release this owner's heap before the next one
            gc.collect()
        raw_after, _ = raw_list_and_parse(kubeconfig)
        raw = min(raw_before, raw_after)
        print(f"first sync under churn ({cluster_pods(url)} pods now)")
        line(f"raw list-and-parse of {objects} objects (before {raw_before:.1f} s, "
             f"after {raw_after:.1f} s)", f"{raw:>10.1f} s")
        for name, (seconds, pods, stats) in syncs.items():
            counts = ", ".join(f"{kind}: {s['lists']} lists, {s['full_lists']} full, "
                               f"{s['watch_lists']} watch-lists" for kind, s in stats.items())
            line(f"owner's first sync, {name} ({pods} pods; {counts})",
                 f"{seconds:>10.1f} s")
            line(f"  sync / raw list-and-parse, {name}", f"{seconds / raw:>10.2f}")


if __name__ == "__main__":
    main()
