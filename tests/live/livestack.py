"""Helpers for the live tests: the processes of a stack, and waiting on conditions."""
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import urllib3
from django.db import connection

from dashboard.feed.commands import send

ROOT = Path(__file__).resolve().parents[2]


def wait_for(predicate, timeout=60.0, what="the condition"):
    """Poll `predicate` until it returns something truthy; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.05)


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
    processes: dict = field(default_factory=dict)
    http: urllib3.PoolManager = field(default_factory=urllib3.PoolManager)

    def start(self, name, argv):
        log = open(self.tmp / f"{name}.log", "wb")
        self.processes[name] = subprocess.Popen(argv, cwd=ROOT, env=self.env, stdout=log,
                                                stderr=subprocess.STDOUT)
        return self.processes[name]

    def owner(self, name):
        return self.start(name, [sys.executable, "manage.py", "watch", "--id", name])

    def control(self, action, body=None):
        method = "GET" if action == "state" else "POST"
        response = self.http.request(method, f"{self.cluster_url}/simcluster/v1/{action}",
                                     body=orjson.dumps(body or {}))
        assert response.status == 200, response.data
        return orjson.loads(response.data)

    def log(self, name):
        return (self.tmp / f"{name}.log").read_text(errors="replace")

    def stop(self, name, sig="terminate"):
        process = self.processes.pop(name)
        getattr(process, sig)()
        process.wait(timeout=30)


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
