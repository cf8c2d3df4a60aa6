"""Start child processes together; stop them together.

Why: `manage.py up` runs the dashboard as several processes (the embedded
Redis and the web server now; the watch worker, the simulated cluster and
Celery next). The dashboard is broken as soon as any of them is gone, so
the supervisor reports the first child that exits, and stopping it stops
every child, newest first, so that no process outlives the command.
"""
import queue
import signal
import subprocess
import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class Child:
    name: str
    argv: list[str]


class Supervisor:
    """Use as a context manager: leaving it stops every child still running."""

    def __init__(self, stop_timeout: float = 10.0):
        self.stop_timeout = stop_timeout
        self.running: list[subprocess.Popen] = []  # in start order
        self._exits: queue.Queue = queue.Queue()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.stop()

    def start(self, child: Child) -> subprocess.Popen:
        """Start `child` in its own process group, so that a Ctrl-C in the
        terminal reaches only the supervisor, which then stops children in order."""
        process = subprocess.Popen(child.argv, process_group=0)
        self.running.append(process)
        threading.Thread(target=lambda: self._exits.put((child, process.wait())),
                         name=f"wait-{child.name}", daemon=True).start()
        return process

    def wait(self) -> tuple[Child, int]:
        """Block until a child exits; return it and its exit code.

        A signal (Ctrl-C: KeyboardInterrupt) interrupts the wait."""
        return self._exits.get()

    def stop(self):
        """Stop every child, newest first: SIGTERM, then SIGKILL after `stop_timeout`."""
        while self.running:
            process = self.running.pop()
            if process.poll() is not None:
                continue
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(self.stop_timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
