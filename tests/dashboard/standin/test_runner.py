"""The stand-in's loop: back-to-back steps while they place pods, the period otherwise."""
import threading

import pytest

from dashboard.standin.runner import StandInLoop, keeps_placing


def counts(bind=0, wait=0, preempt=0, error=0, victims=0):
    return {"bind": bind, "wait": wait, "preempt": preempt, "error": error, "victims": victims}


@pytest.mark.parametrize("outcome, placing", [
    (counts(bind=20), True),
    (counts(bind=1, wait=19), True),            # placed one, the limit attempted: more due
    (counts(bind=19), False),                   # fewer than the limit: the queue is empty
    (counts(wait=20), False),                   # nothing placed: paced by the period
    (counts(error=20), False),
    (counts(bind=1, preempt=1, victims=40), False),   # victims are not attempts
    (counts(), False),
])
def test_a_step_is_followed_at_once_only_when_it_placed_and_used_its_limit(outcome, placing):
    assert keeps_placing(outcome, 20) is placing


class _Stop(threading.Event):
    """Records each wait instead of waiting."""

    def __init__(self):
        super().__init__()
        self.waits = []

    def wait(self, timeout=None):
        self.waits.append(timeout)
        return self.is_set()


class _Scheduler:
    class view:
        @staticmethod
        def start():
            pass

    closed = False

    def close(self):
        self.closed = True


class _Loop(StandInLoop):
    def __init__(self, steps, stop):
        self.period, self.limit = 1.5, 2
        self.scheduler, self._steps, self._stop, self.ran = _Scheduler(), iter(steps), stop, []

    def step(self, now=None):
        step = next(self._steps, None)
        if step is None:
            self._stop.set()
            return counts()
        self.ran.append(step)
        return step


def test_the_loop_waits_the_period_only_after_a_step_that_did_not_keep_placing():
    stop = _Stop()
    loop = _Loop([counts(bind=2), counts(bind=1, wait=1), counts(bind=1), counts(wait=2),
                  counts(bind=2)], stop)
    loop.run(stop)
    assert len(loop.ran) == 5
    # after: placing, placing, short (wait), unschedulable (wait), placing, the end (wait)
    assert stop.waits == [1.5, 1.5, 1.5]
    assert loop.scheduler.closed
