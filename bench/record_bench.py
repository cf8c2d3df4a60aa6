"""Record and replay rates: `manage.py record`'s recorder and `up --replay`'s replay, in
events per second, beside the owner's rate applying a live watch (feed_bench's figure,
measured in the same run on the same cluster).

    .venv/bin/python bench/record_bench.py [--nodes 1000 --pods 30000 --churn 500]

1. record: the recorder (dashboard/kube/recorder.py) against a simulated cluster in its
   own process, gzip-compressed as a .gz name asks: the listing (an Add per object), then
   churn for `--seconds`, its watch events written as they come (whether it keeps up);
2. replay at speed 0: the file checked whole (simcluster/recording.py), then played a
   line at a time into a fresh simulated cluster's store (simcluster/replay.py), every
   record a watch event as the API server would send it;
3. the owner applying a live watch: feed_bench's watch rate (a watch from
   resourceVersion 0 over HTTP into the cache through the decoder process).
"""
import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

import urllib3

sys.path.insert(0, str(Path(__file__).resolve().parent))

from feed_bench import bench_watch_rate  # noqa: E402  (sets Django up)
from benchkit import cluster_pods, core_api, line, served_cluster  # noqa: E402

from simcluster import SimCluster  # noqa: E402
from simcluster.recording import RecordingWriter  # noqa: E402

from dashboard.kube.recorder import ClusterRecorder  # noqa: E402


def wait(condition, timeout=600.0):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit("timed out")
        time.sleep(0.01)


def bench_record(url, kubeconfig, objects, churn, seconds, path):
    writer = RecordingWriter(path)
    stop = threading.Event()
    recorder = ClusterRecorder(core_api(str(kubeconfig)), writer, stop)
    started, cpu = time.perf_counter(), time.process_time()
    thread = threading.Thread(target=recorder.run)
    thread.start()
    wait(lambda: recorder.counts["Add"] >= objects)
    listed, listed_cpu = time.perf_counter() - started, time.process_time() - cpu
    http = urllib3.PoolManager()
    before = recorder.events
    http.request("POST", f"{url}/simcluster/v1/churn", json={"rate": churn, "scheduler": True})
    churned = time.perf_counter()
    time.sleep(seconds)
    http.request("POST", f"{url}/simcluster/v1/churn", json={"rate": 0})
    during = time.perf_counter() - churned
    recorded = recorder.events - before
    stop.set()
    thread.join()
    writer.close()
    print(f"record ({objects} objects listed, then churn asked at {churn}/s for {seconds} s)")
    line("listing written (Adds), wall", f"{objects / listed:>10,.0f} /s")
    line("  CPU of the recorder per Add", f"{listed_cpu / objects * 1e6:>10.1f} us")
    line("watch events written while the cluster churned", f"{recorded / during:>10,.0f} /s")
    line("file (gzip)", f"{path.stat().st_size / 1e6:>10.1f} MB")


def bench_replay(path):
    """Checked whole first (as `up --replay` does before it starts), then played a line
    at a time into a fresh cluster's store."""
    started = time.perf_counter()
    with SimCluster(nodes=0, pods=0, kubelet=False, replay=path, replay_speed=0) as sim:
        played = time.perf_counter()
        sim.replay.wait(3600)
        events = sim.replay.played
    playing, total = time.perf_counter() - played, time.perf_counter() - started
    print(f"replay at speed 0 ({events} records)")
    line("checked (every line parsed, none kept)", f"{events / (played - started):>10,.0f} /s")
    line("played into the store (read, parsed, a watch event each)",
         f"{events / playing:>10,.0f} /s")
    line("both, from the file to the last event", f"{events / total:>10,.0f} /s")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=30000)
    parser.add_argument("--churn", type=float, default=500.0)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, \
            served_cluster(args.nodes, args.pods, "--bookmark-interval", "5") as (url, kubeconfig):
        path = Path(tmp) / "bench.jsonl.gz"
        bench_record(url, kubeconfig, args.nodes + args.pods, args.churn, args.seconds, path)
        bench_replay(path)
        bench_watch_rate(kubeconfig, cluster_pods(url))


if __name__ == "__main__":
    main()
