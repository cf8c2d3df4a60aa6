"""Events per second through a Reflector from a churning simulated cluster over HTTP.

    .venv/bin/python bench/reflector_bench.py --churn 30000 --seconds 10

The simulated cluster runs in its own process (`python -m simcluster serve`), so it
does not share this process's GIL; the reflector here watches pods with the
official client into a trivial sink (a counter). Two figures:

- live: the reflector follows the churn as it happens; events/s received is
  compared with the rate the cluster produced them (its resourceVersion growth),
  so a cluster that cannot churn fast enough shows up as the bottleneck;
- replay: after the churn, a watch from the resourceVersion the live run started
  at is served from the cluster's history as fast as the server can send it,
  which is the reflector's ceiling (the server's cost included); the reflector
  process's CPU time gives its own cost per event whatever the server does;
- canned: the same reflector against a process that only writes prebuilt watch
  bytes (one 4 KB pod event per chunk, like the API server), i.e. without the
  simulated cluster's cost.


"""

import argparse
import http.client
import json
import pathlib
import subprocess
import sys
import threading
import time
import urllib.request
from urllib.parse import urlsplit

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kubernetes import client  # noqa: E402

from dashboard.kube.reflector import Reflector, Watched  # noqa: E402


def state(url: str) -> dict:
    with urllib.request.urlopen(url + "/simcluster/v1/state") as r:
        return json.load(r)


def control(url: str, action: str, body: dict) -> dict:
    req = urllib.request.Request(url + "/simcluster/v1/" + action, data=json.dumps(body).encode(),
                                 method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        return json.load(r)


class Counter:
    def __init__(self):
        self.events = 0
        self.target = None
        self.done = threading.Event()

    def __call__(self, item):
        if type(item) is Watched:
            self.events += 1
            if self.target is not None and self.events >= self.target:
                self.done.set()


def serve_canned(sock, payload: bytes) -> None:
    """A process that answers every request with the same prebuilt chunked watch."""
    while True:
        conn, _ = sock.accept()
        conn.recv(65536)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n" + payload)
        conn.close()


def canned(events: int) -> None:
    import multiprocessing
    import socket

    import orjson

    from simcluster.generate import generate_cluster
    pods = generate_cluster(10, 2000, 3, 1).pods
    lines = []
    for i in range(events):
        p = pods[i % len(pods)]
        obj = {"kind": "Pod", "apiVersion": "v1", **p,
               "metadata": {**p["metadata"], "resourceVersion": str(i + 1)}}
        lines.append(b'{"type":"MODIFIED","object":' + orjson.dumps(obj) + b"}\n")
    payload = b"".join(b"%x\r\n%s\r\n" % (len(x), x) for x in lines) + b"0\r\n\r\n"
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    proc = multiprocessing.get_context("fork").Process(target=serve_canned,
                                                       args=(sock, payload), daemon=True)
    proc.start()
    try:
        host, port = sock.getsockname()
        api = client.CoreV1Api(client.ApiClient(client.Configuration(host=f"http://{host}:{port}")))
        sink = Counter()
        r = Reflector(api, "pods", sink, watch_timeout=3600)
        r.resource_version = "1"
        start, cpu = time.perf_counter(), time.process_time()
        r.watch_once()
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
        print(f"canned: {sink.events} events ({sum(map(len, lines)) / len(lines):,.0f} bytes "
              f"each) in {elapsed:.2f} s ({sink.events / elapsed:,.0f} events/s); CPU "
              f"{cpu:.2f} s ({sink.events / cpu:,.0f} events per CPU second)")
    finally:
        proc.kill()


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--nodes", type=int, default=200)
    p.add_argument("--pods", type=int, default=5000)
    p.add_argument("--churn", type=float, default=30000)
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--canned", type=int, default=30000, help="events in the canned run")
    args = p.parse_args()
    canned(args.canned)

    server = subprocess.Popen(
        [sys.executable, "-m", "simcluster", "serve", "--nodes", str(args.nodes), "--pods",
         str(args.pods), "--no-kubelet",
         "--bookmark-interval", "5"], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        url = server.stdout.readline().strip()
        api = client.CoreV1Api(client.ApiClient(client.Configuration(host=url)))

        # live
        sink = Counter()
        r = Reflector(api, "pods", sink, watch_timeout=3600)
        t = r.start()
        while not r.stats["watches"]:
            time.sleep(0.01)
        rv0 = int(r.resource_version)
        control(url, "churn", {"rate": args.churn})
        start = time.perf_counter()
        time.sleep(args.seconds)
        control(url, "churn", {"rate": 0})
        produced_rv = int(state(url)["resourceVersion"])
        received = sink.events
        elapsed = time.perf_counter() - start
        # let it drain what was sent, then stop
        deadline = time.monotonic() + 60
        while int(r.resource_version or 0) < produced_rv and time.monotonic() < deadline:
            time.sleep(0.05)
        drained = time.perf_counter() - start
        r.stop()
        t.join(5)
        produced = produced_rv - rv0
        print(f"live:   cluster produced {produced} changes in {elapsed:.1f} s "
              f"({produced / elapsed:,.0f}/s); reflector received {received} in that time "
              f"({received / elapsed:,.0f}/s); all {sink.events} delivered after "
              f"{drained:.1f} s ({sink.events / drained:,.0f}/s)")

        # replay the same history as fast as it can be sent
        sink2 = Counter()
        sink2.target = sink.events
        r2 = Reflector(api, "pods", sink2, watch_timeout=3600)
        r2.resource_version = str(rv0)
        t2 = threading.Thread(target=r2.watch_once)
        start, cpu = time.perf_counter(), time.process_time()
        t2.start()
        sink2.done.wait(120)
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
        r2.stop()
        t2.join(5)
        print(f"replay: {sink2.events} events in {elapsed:.2f} s "
              f"({sink2.events / elapsed:,.0f} events/s); reflector process CPU {cpu:.2f} s "
              f"({sink2.target / cpu:,.0f} events per CPU second)")

        # the server alone: the same replay read raw, without parsing
        conn = http.client.HTTPConnection(urlsplit(url).hostname, urlsplit(url).port)
        conn.request("GET", f"/api/v1/pods?watch=true&resourceVersion={rv0}&timeoutSeconds=5")
        resp = conn.getresponse()
        start, lines = time.perf_counter(), 0
        while lines < sink2.target:
            data = resp.read1(1 << 16)
            if not data:
                break
            lines += data.count(b"\n")
        elapsed = time.perf_counter() - start
        conn.close()
        print(f"server: {lines} event lines read raw in {elapsed:.2f} s "
              f"({lines / elapsed:,.0f} lines/s)")
    finally:
        server.terminate()
        server.wait(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
