"""Warm pool claims against the simulated cluster: claims per second on one pool, and the
dispatch latency (enqueue to claimed) while idle pods are available.

    .venv/bin/python bench/claim_bench.py [--burst 3000] [--rate 500 --steady 2000]
                                          [--max-inflight 32] [--conflicts 0.0]

The simulated cluster runs in its own process (`python -m simcluster serve --pools
bench=N`); here run what `manage.py pools` runs: the Reflector watching the pool pods,
one PoolScheduler, and the claimer's strategic merge patches with resourceVersion over
HTTP. Redis and the web are left out (one RPUSH and one BLPOP per claim).

1. burst: `--burst` requests enqueued at once; claims per second from the first enqueue
   to the last claim, the latency spread (which includes waiting behind the burst), and
   the CPU time each side spent per claim (on a shared machine, the wall-clock rate
   says more about the neighbours than about the code);
2. steady: `--steady` requests at `--rate` a second (below the burst's throughput), with
   idle pods always available: dispatch latency p50 and p99.
"""
import argparse
import os
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

from benchkit import line, percentile, served_cluster  # noqa: E402
from bind_bench import children, cpu_seconds  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--burst", type=int, default=3000)
    parser.add_argument("--steady", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=500.0, help="steady claims per second")
    parser.add_argument("--max-inflight", type=int, default=32)
    parser.add_argument("--conflicts", type=float, default=0.0,
                        help="share of claims the cluster answers 409 (update_conflict_rate)")
    args = parser.parse_args(argv)

    from kubernetes import client, config

    from warmpool import ClaimOptions, ClaimRequest, ClaimWaiter, PoolScheduler

    from dashboard.poolkeeper.claimer import ApiClaimer
    from dashboard.poolkeeper.feed import PoolFeed, pool_reflector

    # a conflict (injected: the pod is left as it was) holds its pod for the reservation's
    # TTL, so spare pods keep idle pods available throughout
    pods = int((args.burst + args.steady) / (1 - args.conflicts)) + 100
    print(f"claim_bench: one pool of {pods} idle pods, {args.max_inflight} claims in flight, "
          f"{args.conflicts:.0%} conflicts injected")
    with served_cluster(10, 0, "--pools", f"bench={pods}", "--faults",
                        f'{{"update_conflict_rate": {args.conflicts}}}') as (url, kubeconfig):
        configuration = client.Configuration()
        config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
        claimer = ApiClaimer(configuration)
        feed = PoolFeed(lambda pool, members: PoolScheduler(
            pool, members, claimer, capacity=pods, max_inflight=args.max_inflight).start())
        stop = threading.Event()
        pool_reflector(client.CoreV1Api(client.ApiClient(configuration)), feed, stop).start()
        scheduler = feed.scheduler("bench")
        deadline = time.monotonic() + 120
        while len(scheduler.members) < pods or scheduler.status()["idle_ready"] < pods:
            if time.monotonic() > deadline:
                raise SystemExit("the pool never showed all its pods")
            time.sleep(0.05)

        def request():
            waiter = ClaimWaiter()
            assert scheduler.enqueue(ClaimRequest(ClaimOptions(), scheduler.clock() + 60, waiter))
            return waiter

        print("1. burst")
        cluster_pid = children(os.getpid())[0]
        cpu_before = time.process_time(), cpu_seconds(cluster_pid)
        started = time.perf_counter()
        waiters = [request() for _ in range(args.burst)]
        results = [w.wait(120) for w in waiters]
        elapsed = time.perf_counter() - started
        cpu_here = time.process_time() - cpu_before[0]
        cpu_cluster = cpu_seconds(cluster_pid) - cpu_before[1]
        failed = [r for r in results if r is None or not r.ok]
        won = [r for r in results if r is not None and r.ok]
        line("claims", f"{len(won)} ({len(failed)} failed)")
        line("claims per second", f"{len(won) / elapsed:,.0f}")
        line("conflicts retried", scheduler.metrics.outcomes["retriable"])
        line("CPU per claim: pools side / simulated API server",
             f"{cpu_here / len(won) * 1e6:.0f} us / {cpu_cluster / len(won) * 1e6:.0f} us")
        line("claims per second the CPU allows (one core each side)",
             f"{len(won) / max(cpu_here, cpu_cluster):,.0f}")
        line("latency p50 / p99 (queued behind the burst)",
             f"{statistics.median(r.latency for r in won) * 1000:.1f} ms / "
             f"{percentile([r.latency for r in won], 0.99) * 1000:.1f} ms")

        print(f"2. steady: {args.steady} claims at {args.rate:g}/s, idle pods available")
        gap = 1.0 / args.rate
        waiters = []
        start = time.perf_counter()
        for i in range(args.steady):
            wait = start + i * gap - time.perf_counter()
            if wait > 0:
                time.sleep(wait)   # pacing the offered load, not synchronisation
            waiters.append(request())
        offered = args.steady / (time.perf_counter() - start)
        results = [w.wait(60) for w in waiters]
        latencies = [r.latency for r in results if r is not None and r.ok]
        line("claims", f"{len(latencies)} of {args.steady}")
        line("offered rate achieved", f"{offered:,.0f}/s")
        line("dispatch latency p50", f"{statistics.median(latencies) * 1000:.1f} ms")
        line("dispatch latency p99", f"{percentile(latencies, 0.99) * 1000:.1f} ms")
        line("scheduler histogram p50 / p99 (whole run, bucket bounds)",
             f"{scheduler.metrics.latency.quantile(0.5) * 1000:g} ms / "
             f"{scheduler.metrics.latency.quantile(0.99) * 1000:g} ms")
        scheduler.shutdown()
        stop.set()
    return 0


if __name__ == "__main__":
    sys.exit(main())
