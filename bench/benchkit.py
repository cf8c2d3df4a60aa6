"""What the benchmarks share: printing a figure, a simulated cluster in its own process,
and an owner synced from it over HTTP (reflectors in a decoder process, as in `manage.py
watch`).

Django-free at import, so the cache benchmark can use `line` without settings."""
import argparse
import contextlib
import functools
import gc
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.children import spawn  # noqa: E402  (a bench's children die with it, even killed)


def line(label, value):
    print(f"  {label:<60} {value}")


def cluster_arguments(description: str, runs: int) -> argparse.Namespace:
    """The command line of a benchmark over a generated cluster held in a Cache (see
    loaded_cache): --nodes --pods --zones, and --runs (timed calls per shape)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=150000)
    parser.add_argument("--zones", type=int, default=5)
    parser.add_argument("--runs", type=int, default=runs, help="timed calls per shape")
    return parser.parse_args()


def loaded_cache(args):
    """The generated cluster of `args` (seed 1) in a Cache: its nodes and its bound pods
    (those with spec.nodeName), the generator's objects freed after. Prints what it built;
    returns (cache, the node names)."""
    from schedcache import Cache
    from simcluster.generate import generate_cluster

    start = time.perf_counter()
    cluster = generate_cluster(nodes=args.nodes, pods=args.pods, zones=args.zones, seed=1)
    cache = Cache(ttl=30)
    for node in cluster.nodes:
        cache.add_node(node)
    bound = sum(1 for pod in cluster.pods if pod["spec"].get("nodeName")
                and cache.add_pod(pod) is None)
    names = [node["metadata"]["name"] for node in cluster.nodes]
    del cluster
    gc.collect()
    print(f"cluster: {args.nodes} nodes, {bound} bound pods, {args.zones} zones "
          f"(built in {time.perf_counter() - start:.1f} s)")
    return cache, names


def percentile(samples, q: float):
    """The sample at rank q (0 to 1) of the sorted samples: every bench's p50 and p99."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


class Ticker:
    """A thread that wants the GIL every millisecond, as the owner's thread does: its gaps
    between ticks are what another thread of the process makes the owner wait."""

    def __init__(self):
        self.gaps, self._stop = [], threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        last = time.perf_counter()
        while not self._stop.is_set():
            time.sleep(0.001)
            now = time.perf_counter()
            self.gaps.append(now - last)
            last = now

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


@contextlib.contextmanager
def served_cluster(nodes, pods, *options):
    """`python -m simcluster serve` with 5 zones; yields (url, kubeconfig path)."""
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = Path(tmp) / "kubeconfig"
        process = spawn(
            [sys.executable, "-m", "simcluster", "serve", "--nodes", str(nodes), "--pods",
             str(pods), "--zones", "5", *options, "--kubeconfig", str(kubeconfig)],
            cwd=ROOT, stdout=subprocess.PIPE, text=True)
        try:
            yield process.stdout.readline().strip(), kubeconfig
        finally:
            process.terminate()
            process.wait()


def start_redis(tmp: Path):
    """REDIS_URL's Redis, else an embedded one in `tmp` (returned to be stopped)."""
    from dashboard.runtime import embedded_redis
    from dashboard.runtime.redis_urls import unix_url

    if os.environ.get("REDIS_URL"):
        return os.environ["REDIS_URL"], None
    socket = tmp / "redis.sock"
    server = spawn(embedded_redis.command(socket))
    url = unix_url(socket)
    embedded_redis.wait_until_ready(url, server)
    return url, server


def cluster_pods(url) -> int:
    """How many pods the simulated cluster holds now (its control endpoint)."""
    with urllib.request.urlopen(f"{url}/simcluster/v1/state") as response:
        return json.load(response)["counts"]["pods"]


def core_api(kubeconfig):
    from kubernetes import client, config
    return client.CoreV1Api(config.new_client_from_config(config_file=str(kubeconfig)))


def drain_until(owner, done, timeout=600):
    """Apply the owner's feed until `done()`; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not done():
        if not owner.drain_feed(limit=20000):
            time.sleep(0.001)
        if time.monotonic() > deadline:
            raise TimeoutError("the owner did not finish in time")


def sync(owner, kubeconfig, options=None):
    """Start a decoder process (the reflectors for nodes and pods, with `options`) into
    `owner`, as in `manage.py watch`, apply until synced, then settle the heap as the
    owner process does. Returns the event that stops the decoder, the seconds each part
    took and the decoder process: (stop, syncing, settling, decoder)."""
    from dashboard.owner.decoder import DecoderProcess
    from dashboard.owner.runner import settle_heap
    stop = threading.Event()
    started = time.perf_counter()
    decoder = DecoderProcess(owner.feed.put, functools.partial(core_api, str(kubeconfig)),
                             stop=stop, options=options).start()
    drain_until(owner, lambda: all(owner.synced.values()) and owner.feed.empty())
    synced = time.perf_counter()
    settle_heap()
    return stop, synced - started, time.perf_counter() - synced, decoder
