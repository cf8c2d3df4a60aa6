"""The supervisor reports the first child to exit and stops every child."""
import os
import signal
import sys

from dashboard.supervisor import Child, Supervisor

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]


def test_the_first_child_to_exit_is_reported_and_the_rest_stopped():
    with Supervisor() as supervisor:
        sleeper = supervisor.start(Child("sleeper", SLEEPER))
        supervisor.start(Child("short", [sys.executable, "-c", "raise SystemExit(3)"]))
        child, code = supervisor.wait()
        assert (child.name, code) == ("short", 3)
    assert sleeper.returncode == -signal.SIGTERM
    assert supervisor.running == []


def test_children_are_in_their_own_process_group():
    """So that Ctrl-C reaches only the supervisor, which stops them in order."""
    with Supervisor() as supervisor:
        sleeper = supervisor.start(Child("sleeper", SLEEPER))
        assert os.getpgid(sleeper.pid) == sleeper.pid != os.getpgid(0)


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
