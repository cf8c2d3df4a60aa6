"""Helpers for the live tests: the processes of a stack."""
import os
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import urllib3
from django.conf import settings
from django.db import connection
from kubernetes import client, config

from dashboard.clients.owner_client import send
from dashboard.models import PodRecord
from dashboard.wire.clients import redis_client
from dashboard.wire.commands import CommandError
from tests.children import spawn, stop
from tests.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]


def database_url() -> str:
    """The test database, in the form the child processes' settings read."""
    s = connection.settings_dict
    if s["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{s['NAME']}"
    user = s.get("USER") or ""
    return f"postgres://{user}@{s.get('HOST') or '127.0.0.1'}:{s.get('PORT') or 5432}/{s['NAME']}"


@dataclass
class Stack:
    tmp: Path
    env: dict
    cluster_url: str = ""
    web_url: str = ""
    processes: dict = field(default_factory=dict)
    http: urllib3.PoolManager = field(default_factory=urllib3.PoolManager)

    def start(self, name, argv, **env):
        """Start a process of the stack; `env` adds variables for this one alone."""
        log = open(self.tmp / f"{name}.log", "wb")
        self.processes[name] = spawn(argv, cwd=ROOT, env=dict(self.env, **env),
                                     stdout=log, stderr=subprocess.STDOUT)
        return self.processes[name]

    def owner(self, name, **env):
        return self.start(name, [sys.executable, "manage.py", "watch", "--id", name], **env)

    def control(self, action, body=None):
        method = "GET" if action == "state" else "POST"
        response = self.http.request(method, f"{self.cluster_url}/simcluster/v1/{action}",
                                     body=orjson.dumps(body or {}))
        assert response.status == 200, response.data
        return orjson.loads(response.data)

    def cluster(self, kubeconfig, *options):
        """`python -m simcluster serve` writing `kubeconfig`; waits until it serves and
        records its URL (the first line it prints)."""
        process = self.start("cluster", [sys.executable, "-m", "simcluster", "serve", *options,
                                         "--kubeconfig", str(kubeconfig)])
        wait_for(lambda: kubeconfig.exists() or process.poll() is not None, 60, "the cluster")
        self.cluster_url = wait_for(lambda: self.log("cluster").split("\n", 1)[0].strip()
                                    if "\n" in self.log("cluster") else "", 10,
                                    "the cluster's URL")
        return self.cluster_url

    def celery(self):
        """A Celery worker (binds) and beat (reaper, comparer)."""
        self.start("worker", [sys.executable, "-m", "celery", "-A", "dashboard", "worker",
                              "--loglevel", "WARNING", "--concurrency", "2"])
        self.start("beat", [sys.executable, "-m", "celery", "-A", "dashboard", "beat",
                            "--loglevel", "WARNING", "--schedule", str(self.tmp / "beat")])

    def web(self, timeout=60.0):
        """daphne serving dashboard.asgi:application on a free port, as `manage.py up`
        runs it; returns its base URL once it answers HTTP."""
        port = free_port()
        process = self.start("web", [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p",
                                     str(port), "dashboard.asgi:application"])
        url = f"http://127.0.0.1:{port}"

        def answers():
            assert process.poll() is None, f"daphne exited: {self.log('web')[-2000:]}"
            try:
                return self.http.request("GET", f"{url}/", redirect=False, retries=False,
                                         timeout=5).status
            except urllib3.exceptions.HTTPError:
                return None
        wait_for(answers, timeout, "the web to answer")
        self.web_url = url
        return url

    def extender(self, timeout=60.0):
        """The leading owner's own extender listener: its base URL (kube-scheduler's
        urlPrefix), once it answers HTTP (it opens once the owner is synced)."""
        url = f"http://{self.env['SCHEDVIEW_EXTENDER_ADDRESS']}/extender"

        def answers():
            try:
                return self.http.request("POST", f"{url}/filter", retries=False,
                                         timeout=5).status
            except urllib3.exceptions.HTTPError:
                return None
        wait_for(answers, timeout, "the owner's extender listener")
        return url

    def stop_all(self):
        """Stop every process, newest first; one that does not stop in time is killed."""
        for name in reversed(list(self.processes)):
            self.stop(name)

    def log(self, name):
        return (self.tmp / f"{name}.log").read_text(errors="replace")

    def stop(self, name, sig="terminate"):
        stop(self.processes.pop(name), sig)


def child_env(tmp, redis_url, kubeconfig, **settings) -> dict:
    """The environment of a stack's processes: this run's Redis and test database, the
    cluster's kubeconfig, files under `tmp`, and SCHEDVIEW_* settings by keyword; the
    owners' extender listener on a free port unless `extender_address` is given."""
    settings.setdefault("extender_address", f"127.0.0.1:{free_port()}")
    return dict(os.environ, REDIS_URL=redis_url, DATABASE_URL=database_url(),
                SCHEDVIEW_KUBECONFIG=str(kubeconfig), SCHEDVIEW_VAR_DIR=str(tmp),
                DJANGO_SETTINGS_MODULE="dashboard.settings",
                **{f"SCHEDVIEW_{name.upper()}": str(value) for name, value in settings.items()})


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the OS picked it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def clear_redis():
    """Forget what earlier runs left in Redis: the owner's keys (lease, commands, status),
    tasks still queued for Celery, and channel-layer groups of web processes killed."""
    client = redis_client(settings.REDIS_URL)
    for pattern in ("schedview:*", "asgi:group:*"):
        for key in client.scan_iter(pattern):
            client.delete(key)
    client.delete("celery")


def new_pod(api, name, node=None):
    """Create a small pod in the cluster's default namespace (bound when `node` is given)."""
    spec = {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                            "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}
    if node:
        spec["nodeName"] = node
    pod = api.create_namespaced_pod("default", {"apiVersion": "v1", "kind": "Pod",
                                                "metadata": {"name": name}, "spec": spec})
    return pod.metadata.uid


def state_of(uid):
    """The pod's state in the owner's cache (Pending if only pending), "gone", or None when
    the owner did not answer."""
    try:
        return send("get_pod", {"uid": uid}, timeout=5)["state"]
    except CommandError as error:
        return "gone" if error.status == 404 else None


def owner_status(timeout=5.0):
    return send("status", timeout=timeout)


def synced_owner(timeout=60.0):
    return wait_for(lambda: _synced(), timeout, "a synced owner")


def _synced():
    try:
        status = owner_status(timeout=2.0)
    except Exception:
        return None
    return status if status["synced"] and status["feed_backlog"] == 0 else None


def cluster_pods(stack) -> dict:
    """uid -> the node the cluster binds the pod to ("" for none), as the API server says."""
    api = client.CoreV1Api(config.new_client_from_config(
        config_file=stack.env["SCHEDVIEW_KUBECONFIG"]))
    return {p.metadata.uid: p.spec.node_name or "" for p in
            api.list_pod_for_all_namespaces().items}


def pod_rows() -> dict:
    """uid -> (state, node) of every pod row the pages show (the test's database)."""
    return {uid: (state, node) for uid, state, node in
            PodRecord.objects.values_list("uid", "state", "node")}


def rows_against_cluster(rows: dict, pods: dict) -> list:
    """Where the pages' pod rows (uid -> (state, node)) disagree with the cluster's pods
    (cluster_pods): [(uid, the row or None, the cluster's node or None)]. A bound pod's row
    is Added on its node; an unbound one's is anything else; no row of a pod the cluster
    no longer has."""
    wrong = []
    for uid in rows.keys() | pods.keys():
        row, node = rows.get(uid), pods.get(uid)
        if row is None or node is None or (row[0] == "Added") != bool(node) or (
                node and row[1] != node):
            wrong.append((uid, row, node))
    return sorted(wrong, key=str)
