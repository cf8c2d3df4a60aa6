"""The supervisor restarts children that exit, gives up on a crash loop, and stops every
child however it ends (a SIGKILL included)."""
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dashboard.runtime.supervisor import Child, CrashLoop, Supervisor
from tests.dashboard.runtime.processes import alive
from tests.waiting import wait_for

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]
FAILS = [sys.executable, "-c", "raise SystemExit(3)"]


class Enough(Exception):
    """Ends a test's run() from its on_change."""


def test_a_child_that_exits_is_restarted_with_a_doubling_backoff_and_the_others_keep_running():
    said, seen = [], []

    def on_change(states):
        seen.append({state["name"]: state for state in states})
        if seen[-1].get("short", {}).get("restarts") == 2:
            raise Enough

    with Supervisor(backoff=0.05, settle=60, on_change=on_change, say=said.append) as supervisor:
        sleeper = supervisor.start(Child("sleeper", SLEEPER))
        supervisor.start(Child("short", FAILS))
        with pytest.raises(Enough):
            supervisor.run()
        assert sleeper.poll() is None
        short = seen[-1]["short"]
        assert (short["restarts"], short["last_exit"]) == (2, 3)
        assert short["last_restart"] is not None and seen[-1]["sleeper"]["restarts"] == 0
    assert said == ["schedview: short exited with code 3; restarting it in 0.05 s",
                    "schedview: short exited with code 3; restarting it in 0.1 s"]
    assert sleeper.returncode == -signal.SIGTERM
    assert supervisor.running == {}


def test_a_child_runs_with_the_environment_it_is_given(tmp_path, monkeypatch):
    monkeypatch.setenv("OURS", "1")
    out = tmp_path / "env"
    writes_env = [sys.executable, "-c", "import os, sys; open(sys.argv[1], 'w').write("
                  "os.environ.get('GIVEN', '-') + ' ' + os.environ.get('OURS', '-'))", str(out)]
    with Supervisor(say=lambda line: None) as supervisor:
        assert supervisor.start(Child("given", writes_env, env={"GIVEN": "yes"})).wait(30) == 0
    assert out.read_text() == "yes -"           # that environment alone, nothing of ours
    assert "GIVEN" not in os.environ


def test_a_child_failing_right_after_every_start_ends_the_run_naming_it():
    with Supervisor(backoff=0.01, give_up=3, say=lambda line: None) as supervisor:
        supervisor.start(Child("sleeper", SLEEPER))
        supervisor.start(Child("web", FAILS))
        with pytest.raises(CrashLoop, match="web exited with code 3 3 times in a row"):
            supervisor.run()
    assert supervisor.states["web"].restarts == 2


def test_a_child_that_ran_a_while_starts_its_backoff_afresh():
    said = []

    def on_change(states):
        if len(said) == 3:
            raise Enough

    with Supervisor(backoff=0.05, settle=0.0, give_up=2, say=said.append,
                    on_change=on_change) as supervisor:
        supervisor.start(Child("short", FAILS))
        with pytest.raises(Enough):
            supervisor.run()
    assert said == ["schedview: short exited with code 3; restarting it in 0.05 s"] * 3


def test_children_are_in_their_own_process_group():
    """So that Ctrl-C reaches only the supervisor, which stops them in order."""
    with Supervisor() as supervisor:
        sleeper = supervisor.start(Child("sleeper", SLEEPER))
        assert os.getpgid(sleeper.pid) == sleeper.pid != os.getpgid(0)


def test_a_child_yields_the_cores_by_its_niceness_and_the_others_do_not():
    with Supervisor() as supervisor:
        ours = os.getpriority(os.PRIO_PROCESS, 0)
        other = supervisor.start(Child("simcluster", SLEEPER, nice=5))
        own = supervisor.start(Child("web", SLEEPER))
        assert os.getpriority(os.PRIO_PROCESS, other.pid) == min(ours + 5, 19)
        assert os.getpriority(os.PRIO_PROCESS, own.pid) == ours


def test_a_child_that_ignores_sigterm_is_killed():
    supervisor = Supervisor(stop_timeout=0.2)
    # An ignored signal stays ignored through exec: the child ignores SIGTERM from its start.
    previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        stubborn = supervisor.start(Child("stubborn", SLEEPER))
    finally:
        signal.signal(signal.SIGTERM, previous)
    supervisor.stop()
    assert stubborn.returncode == -signal.SIGKILL


def test_infrastructure_stops_after_the_applications(tmp_path):
    """Redis must outlive the children that talk to it while they shut down."""
    log = tmp_path / "order"
    on_term = textwrap.dedent(f"""
        import pathlib, signal, sys, time
        def down(*_):
            with open({str(log)!r}, "a") as order:
                order.write(sys.argv[1] + "\\n")
            sys.exit(0)
        signal.signal(signal.SIGTERM, down)
        pathlib.Path({str(tmp_path)!r}, sys.argv[1]).touch()
        time.sleep(60)
    """)
    with Supervisor() as supervisor:
        supervisor.start(Child("redis", [sys.executable, "-c", on_term, "redis"],
                               infrastructure=True))
        supervisor.start(Child("web", [sys.executable, "-c", on_term, "web"]))
        wait_for(lambda: (tmp_path / "redis").exists() and (tmp_path / "web").exists(),
                   what="both children's SIGTERM handlers installed")
    assert log.read_text().split() == ["web", "redis"]


def test_no_child_outlives_a_sigkilled_supervisor(tmp_path):
    pids = tmp_path / "pids"
    script = textwrap.dedent(f"""
        import sys
        from dashboard.runtime.supervisor import Child, Supervisor
        supervisor = Supervisor()
        children = [supervisor.start(Child(name, {SLEEPER!r})) for name in ("a", "b")]
        open({str(pids)!r}, "w").write(" ".join(str(c.pid) for c in children))
        supervisor.run()
    """)
    process = subprocess.Popen([sys.executable, "-c", script],
                               cwd=Path(__file__).resolve().parents[3])
    children = []
    try:
        wait_for(lambda: pids.exists() and pids.read_text(), what="children started")
        children = [int(pid) for pid in pids.read_text().split()]
        assert all(alive(pid) for pid in children)
        process.kill()
        process.wait(10)
        wait_for(lambda: not any(alive(pid) for pid in children), what="children gone")
    finally:
        process.kill()
        for pid in children:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
