"""Helpers for the warm pool tests: a clock the test moves, an executor the test runs,
a recording claimer, and pool pods."""
from warmpool import ClaimConflict, ClaimOptions, ClaimRequest, ClaimWaiter, PoolMembers
from warmpool.podstate import IDLE, PoolPod


class Clock:
    def __init__(self, now: float = 1000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> float:
        self.now += seconds
        return self.now


class ManualExecutor:
    """Claims wait here until the test runs them (they are 'in flight' meanwhile)."""

    def __init__(self):
        self.jobs = []

    def submit(self, fn, *args):
        self.jobs.append((fn, args))

    def run_all(self) -> int:
        done = 0
        while self.jobs:
            fn, args = self.jobs.pop(0)
            fn(*args)
            done += 1
        return done


class Claimer:
    """Records every CAS; `outcomes[key]` may name an exception to raise for that pod."""

    def __init__(self):
        self.calls = []
        self.outcomes = {}

    def __call__(self, pod, options, claim_id):
        self.calls.append((pod.key, pod.resource_version, claim_id))
        error = self.outcomes.get(pod.key)
        if error is not None:
            raise error
        return {"metadata": {"namespace": pod.namespace, "name": pod.name,
                             "annotations": {"schedview.io/claim": claim_id}}}

    @property
    def keys(self):
        return [key for key, _, _ in self.calls]


def pod(name, phase=IDLE, rv="1", idle_since=0.0, protected=False, pool="web",
        namespace="pools"):
    return PoolPod(namespace=namespace, name=name, pool=pool, phase=phase,
                   resource_version=rv, protected=protected, idle_since=idle_since)


def request(clock, timeout=5.0, options=None, cancelled=None):
    waiter = ClaimWaiter()
    return ClaimRequest(options or ClaimOptions(), clock() + timeout, waiter,
                        cancelled=cancelled), waiter


def conflict(key):
    return ClaimConflict(f"409 on {key}")


def members(pool="web"):
    return PoolMembers(pool)
