"""Processes a test starts: they die with the test process (even when pytest is killed),
and stopping one never hangs the run."""
import os
import subprocess
import sys
from pathlib import Path

from dashboard.runtime.supervisor import die_with_parent

STOP_GRACE = 15.0   # seconds a child has to exit after SIGTERM before it is killed
ROOT = Path(__file__).resolve().parents[1]


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


def fresh_interpreter(probe: str, timeout: float = 120.0) -> str:
    """What `python -c probe` prints, run from the repository's root in a new interpreter
    (what a process loads, not what this test run has loaded); CalledProcessError with its
    stderr if it fails, killed if it outlives `timeout`."""
    process = spawn([sys.executable, "-c", probe], cwd=ROOT, stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE, text=True)
    try:
        out, err = process.communicate(timeout=timeout)
    finally:
        stop(process, "kill")
    if process.returncode:
        raise subprocess.CalledProcessError(process.returncode, probe, out, err)
    return out
