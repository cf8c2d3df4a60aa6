"""Start child processes together, keep them running, stop them together.

Why: `manage.py up` runs the dashboard as several processes (Redis, the
simulated cluster, two cache owners, pools, Celery, the web). One of them
dying must not take the rest down: it is started again after a backoff that
doubles while it keeps failing soon after its start, and only a child caught
in such a crash loop (or one marked not to be restarted) ends the run.
Children die with the supervisor however it ends: a clean stop terminates
them (the applications at once, then the infrastructure they need), and a
SIGKILLed supervisor takes them along through the kernel's parent-death
signal, set in each child before it execs.
"""
import ctypes
import os
import queue
import signal
import subprocess
import threading
import time
from dataclasses import dataclass

_PR_SET_PDEATHSIG = 1   # <linux/prctl.h>
_libc = ctypes.CDLL(None, use_errno=True)


def die_with_parent(parent_pid: int):
    """Ask the kernel to SIGKILL this process when its parent ends (Linux). The parent is
    the *thread* that forked: start children from a thread that lives as long as they
    should. If the parent already ended before this ran, end now."""
    if _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        os._exit(126)
    if os.getppid() != parent_pid:
        os._exit(1)


@dataclass(frozen=True)
class Child:
    name: str
    argv: list[str]
    # Infrastructure (Redis, the simulated cluster) is stopped after every other child,
    # which may still need it to shut down cleanly.
    infrastructure: bool = False
    env: dict[str, str] | None = None    # the child's whole environment (None: ours)
    probe: str = ""      # host:port of its /healthz /readyz /metrics, when it serves them
    pass_fds: tuple[int, ...] = ()   # descriptors it inherits (the extender's socket)
    # Added to its CPU niceness: what stands in for other machines' work (the simulated
    # API server, kube-scheduler's stand-in) yields the cores to the dashboard's own.
    nice: int = 0


@dataclass
class ChildState:
    """What the overview shows of a child: its pid, restarts and last exit."""
    name: str
    pid: int
    started: float              # wall clock, for display
    restarts: int = 0
    last_restart: float | None = None
    last_exit: int | None = None
    probe: str = ""             # where it serves /metrics, for the overview's link

    def as_dict(self) -> dict:
        return dict(self.__dict__)


class CrashLoop(Exception):
    """A child kept failing right after its start; the run ends, naming it."""

    def __init__(self, child: Child, code: int, failures: int):
        super().__init__(f"{child.name} exited with code {code} {failures} times in a row "
                         "right after starting; stopped the others")
        self.child, self.code = child, code


class Supervisor:
    """Use as a context manager: leaving it stops every child still running.

    `run()` keeps the children going until interrupted. A child that exits is started
    again after `backoff` seconds, doubling (at most `max_backoff`) while it exits within
    `settle` seconds of its start; `give_up` such quick exits in a row raise CrashLoop.
    `on_change(states)` hears of every start and exit; `say(line)` logs them."""

    def __init__(self, stop_timeout: float = 10.0, backoff: float = 0.5,
                 max_backoff: float = 30.0, settle: float = 10.0, give_up: int = 5,
                 on_change=None, say=print, clock=time.monotonic, wall_clock=time.time):
        self.stop_timeout = stop_timeout
        self.backoff, self.max_backoff, self.settle, self.give_up = (
            backoff, max_backoff, settle, give_up)
        self.on_change = on_change or (lambda states: None)
        self.say = say
        self.clock, self.wall_clock = clock, wall_clock
        self.running: dict[str, tuple[Child, subprocess.Popen]] = {}   # in start order
        self.states: dict[str, ChildState] = {}
        self._started_at: dict[str, float] = {}
        self._quick_exits: dict[str, int] = {}
        self._due: dict[str, tuple[Child, float]] = {}    # restarts waiting for their time
        self._exits: queue.Queue = queue.Queue()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.stop()

    def start(self, child: Child) -> subprocess.Popen:
        """Start `child` in its own process group (a Ctrl-C in the terminal reaches only the
        supervisor, which stops children in order), bound to die with this thread."""
        parent = os.getpid()

        def in_the_child():
            die_with_parent(parent)
            os.nice(child.nice)

        process = subprocess.Popen(child.argv, process_group=0, env=child.env,
                                   pass_fds=child.pass_fds, preexec_fn=in_the_child)
        self.running[child.name] = (child, process)
        self._started_at[child.name] = self.clock()
        state = self.states.get(child.name)
        if state is None:
            self.states[child.name] = ChildState(child.name, process.pid, self.wall_clock(),
                                                 probe=child.probe)
        else:
            state.pid, state.restarts, state.last_restart = (
                process.pid, state.restarts + 1, self.wall_clock())
        threading.Thread(target=lambda: self._exits.put((child, process.wait())),
                         name=f"wait-{child.name}", daemon=True).start()
        self._changed()
        return process

    def run(self):
        """Restart children as they exit, until interrupted (Ctrl-C: KeyboardInterrupt) or
        a crash loop (CrashLoop). Runs in the thread that started the children, so that
        restarted ones are bound to a thread that lives as long as the supervisor."""
        while True:
            now = self.clock()
            for child, at in [entry for entry in self._due.values() if entry[1] <= now]:
                del self._due[child.name]
                self.start(child)
            wait = min((at for _, at in self._due.values()), default=None)
            try:
                child, code = self._exits.get(
                    timeout=None if wait is None else max(0.0, wait - self.clock()))
            except queue.Empty:
                continue
            self._exited(child, code)

    def _exited(self, child: Child, code: int):
        del self.running[child.name]
        self.states[child.name].last_exit = code
        self._changed()
        quick = self.clock() - self._started_at[child.name] < self.settle
        failures = self._quick_exits[child.name] = (
            self._quick_exits.get(child.name, 0) + 1 if quick else 0)
        if failures >= self.give_up:
            raise CrashLoop(child, code, failures)
        delay = min(self.max_backoff, self.backoff * 2 ** max(0, failures - 1))
        self.say(f"schedview: {child.name} exited with code {code}; "
                 f"restarting it in {delay:g} s")
        self._due[child.name] = (child, self.clock() + delay)

    def _changed(self):
        self.on_change([state.as_dict() for state in self.states.values()])

    def stop(self):
        """Stop every child: the applications together, then the infrastructure; SIGTERM,
        then SIGKILL for those still running `stop_timeout` seconds later."""
        self._due.clear()
        children = list(self.running.values())
        self.running.clear()
        for infrastructure in (False, True):
            group = [process for child, process in reversed(children)
                     if child.infrastructure == infrastructure and process.poll() is None]
            for process in group:
                process.send_signal(signal.SIGTERM)
            deadline = self.clock() + self.stop_timeout
            for process in group:
                try:
                    process.wait(max(0.0, deadline - self.clock()))
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
