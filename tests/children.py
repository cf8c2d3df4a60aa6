"""Processes a test starts: they die with the test process (even when pytest is killed),
and stopping one never hangs the run."""
import os
import subprocess

from dashboard.runtime.supervisor import die_with_parent

STOP_GRACE = 15.0   # seconds a child has to exit after SIGTERM before it is killed


def spawn(argv, **popen) -> subprocess.Popen:
    """`subprocess.Popen(argv, **popen)`, the child asking the kernel to SIGKILL it when
    this process ends. Call it from the test's own thread (the parent is the thread)."""
    parent = os.getpid()
    return subprocess.Popen(argv, preexec_fn=lambda: die_with_parent(parent), **popen)


def stop(process: subprocess.Popen, signal_method: str = "terminate",
         grace: float = STOP_GRACE) -> int:
    """Ask `process` to stop (its `terminate`, `send_signal`... named by `signal_method`),
    then SIGKILL it if it has not exited within `grace` seconds. Its exit code."""
    if process.poll() is None:
        getattr(process, signal_method)()
        try:
            return process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
    return process.wait()
