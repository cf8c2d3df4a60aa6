"""Throughput of the simulated cluster over loopback HTTP (server in its own process).

    .venv/bin/python bench/simcluster_bench.py --nodes 5000 --pods 150000 \
        --steady 180 --steady-churn 1000 --compaction 60

Measures: generation time (in this process), full LIST of all pods (raw bytes and
through the official client with _preload_content=False + orjson), a paged LIST,
a watch without resourceVersion (one synthetic ADDED per pod) read by a raw JSON
line reader, and live events under churn; the server's RSS a pod once it serves and,
with `--steady`, while the kubelet finishes deletes and churn holds the pod count for
that many seconds with the history kept for `--compaction` seconds (between one and two
intervals of churn: 1,000/s compacted every 60 s holds what 200/s holds under
kube-apiserver's 5 minutes).
"""

import argparse
import gc
import http.client
import os
import subprocess
import sys
import time
from urllib.parse import urlsplit

import orjson


def conn_for(url, timeout=600):
    parts = urlsplit(url)
    return http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)


def raw_list(url, path="/api/v1/pods"):
    conn = conn_for(url)
    conn.request("GET", path, headers={"Accept": "application/json"})
    body = conn.getresponse().read()
    conn.close()
    return body


def client_list(url):
    """With the cyclic GC paused while parsing: otherwise its full collections over
    millions of fresh objects cost several times the parse itself."""
    from kubernetes import client
    api = client.CoreV1Api(client.ApiClient(client.Configuration(host=url)))
    resp = api.list_pod_for_all_namespaces(_preload_content=False)
    gc.disable()
    try:
        items = orjson.loads(resp.data)["items"]
    finally:
        gc.enable()
    return f"{len(items)} pods parsed"


def paged_list(url, limit):
    token, count, pages = "", 0, 0
    while True:
        path = f"/api/v1/pods?limit={limit}" + (f"&continue={token}" if token else "")
        data = orjson.loads(raw_list(url, path))
        count += len(data["items"])
        pages += 1
        token = data["metadata"].get("continue")
        if not token:
            return f"{count} pods in {pages} pages"


def watch_lines(url, path, want, seconds):
    """Read watch lines until `want` events or `seconds` pass; returns (events, elapsed)."""
    conn = conn_for(url)
    conn.request("GET", path)
    resp = conn.getresponse()
    start = time.perf_counter()
    count = 0
    while count < want and time.perf_counter() - start < seconds:
        line = resp.fp.readline()  # chunk size line, then the event line, then CRLF
        if not line or line == b"0\r\n":
            break
        event = resp.fp.readline()
        resp.fp.readline()
        if event.startswith(b'{"type":"BOOKMARK"'):
            continue
        count += 1
    elapsed = time.perf_counter() - start
    conn.close()
    return count, elapsed


def rss_mb(pid) -> float:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024


def per_pod(pid, pods) -> str:
    return f"{rss_mb(pid) * 2**20 / pods / 1000:.2f} kB RSS a pod"


def steady(url, pid, seconds, rate):
    """Churn at `rate` holding the pod count, the kubelet finishing deletes; RSS a pod
    and the history's length every 10 s (sleeps pace the samples, not a test)."""
    control(url, "kubelet", {"auto": True})
    control(url, "churn", {"rate": rate, "steady": True})
    start = time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        time.sleep(min(10.0, seconds - elapsed))
        state = control(url, "state", None)
        pods = state["counts"]["pods"]
        print(f"{f'steady churn {rate:g}/s, {time.perf_counter() - start:.0f} s':<44} "
              f"{cpu_seconds(pid):7.2f} s server CPU   {pods} pods, RSS "
              f"{rss_mb(pid):.0f} MB, {per_pod(pid, pods)}, "
              f"history {state.get('history', {}).get('pods', '?')} pod events", flush=True)
    control(url, "churn", {"rate": 0})


def control(url, action, body):
    conn = conn_for(url)
    conn.request("GET" if body is None else "POST", f"/simcluster/v1/{action}",
                 body=None if body is None else orjson.dumps(body))
    reply = orjson.loads(conn.getresponse().read())
    conn.close()
    return reply


def cpu_seconds(pid) -> float:
    """User + system CPU time of a process (robust to other load on the machine)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def phase(label, server_pid, fn):
    """Run fn() -> description; print wall time, the server's and this process's CPU time
    (CPU time stays meaningful when other work loads the machine)."""
    wall, own_cpu = time.perf_counter(), time.process_time()
    server_cpu = cpu_seconds(server_pid) if server_pid else 0.0
    description = fn()
    wall = time.perf_counter() - wall
    server = f"{cpu_seconds(server_pid) - server_cpu:7.2f} s" if server_pid else " " * 9
    print(f"{label:<44} {wall:7.2f} s wall {server} server CPU "
          f"{time.process_time() - own_cpu:7.2f} s client CPU   {description}", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=150000)
    parser.add_argument("--zones", type=int, default=5)
    parser.add_argument("--churn", type=float, default=20000)
    parser.add_argument("--steady", type=float, default=0.0,
                        help="seconds of churn at --steady-churn, RSS printed every 10 s")
    parser.add_argument("--steady-churn", type=float, default=200.0)
    parser.add_argument("--compaction", type=float, default=300.0,
                        help="the server's --compaction-interval")
    args = parser.parse_args()

    from simcluster.generate import generate_cluster
    phase(f"generate_cluster({args.nodes}, {args.pods})", None,
          lambda: f"{len(generate_cluster(args.nodes, args.pods, args.zones, seed=1).pods)} pods")

    started = time.perf_counter()
    server = subprocess.Popen(
        [sys.executable, "-m", "simcluster", "serve", "--nodes", str(args.nodes), "--pods",
         str(args.pods), "--zones", str(args.zones), "--no-kubelet",
         "--compaction-interval", str(args.compaction)],
        stdout=subprocess.PIPE, text=True)
    url = server.stdout.readline().strip()
    print(f"{'server up (generate + serialize + serve)':<44} "
          f"{time.perf_counter() - started:7.2f} s wall {cpu_seconds(server.pid):7.2f} s server "
          f"CPU   {url}, RSS {rss_mb(server.pid):.0f} MB, "
          f"{per_pod(server.pid, args.pods)}", flush=True)
    pid = server.pid

    def listing():
        size = len(raw_list(url))
        return f"{size / 1e6:.0f} MB"

    def watching(path, want, seconds):
        def run():
            count, elapsed = watch_lines(url, path, want, seconds)
            watching.count = count
            return f"{count} events, {count / elapsed:,.0f} events/s"
        return run

    try:
        for i in range(2):
            phase(f"LIST /api/v1/pods, raw bytes (run {i + 1})", pid, listing)
        phase("LIST via kubernetes client, raw + orjson", pid, lambda: client_list(url))
        phase("LIST paged, limit=500, orjson per page", pid, lambda: paged_list(url, 500))
        phase("WATCH without rv: synthetic ADDED", pid,
              watching("/api/v1/pods?watch=true&timeoutSeconds=600", args.pods, 600))
        rv = orjson.loads(raw_list(url, "/api/v1/nodes?limit=1"))["metadata"]["resourceVersion"]
        control(url, "churn", {"rate": args.churn})
        phase("WATCH live events under churn (5 s)", pid,
              watching(f"/api/v1/pods?watch=true&resourceVersion={rv}&timeoutSeconds=60",
                       10**9, 5))
        control(url, "churn", {"rate": 0})
        phase("WATCH replay of those events from history", pid,
              watching(f"/api/v1/pods?watch=true&resourceVersion={rv}&timeoutSeconds=60",
                       watching.count, 60))
        if args.steady:
            steady(url, pid, args.steady, args.steady_churn)
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
