"""A claim: what the caller asks for, how it waits, what it gets, and the CAS it writes.

`ClaimOptions` are checked when made (ValueError says what is wrong), so a bad
request is refused before it queues and never half-applied to a pod.
"""
import re
import threading
import uuid
from dataclasses import dataclass, field
from typing import Callable

from warmpool.podstate import (CLAIM_ANNOTATION, CLAIM_PHASES, IDLE_SINCE_ANNOTATION,
                               PHASE_LABEL, POOL_LABEL, RUNNING, PoolPod)

_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_KEY = re.compile(rf"^([a-z0-9]([-a-z0-9.]{{0,251}}[a-z0-9])?/)?{_NAME}$")
_VALUE = re.compile(rf"^({_NAME})?$")
_CONTAINER = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_OURS = (POOL_LABEL, PHASE_LABEL, CLAIM_ANNOTATION, IDLE_SINCE_ANNOTATION)


class ClaimConflict(Exception):
    """Retriable: the pod changed under us (409 on the CAS, or not idle any more)."""


class ClaimRefused(Exception):
    """Hard: the API server refused the claim for a reason another pod will not fix."""


@dataclass(frozen=True)
class ClaimOptions:
    """What a claim changes on the pod it gets: container images by container name,
    labels and annotations merged in, and the pool phase it moves to (Running)."""
    container_images: dict = field(default_factory=dict)
    labels: dict = field(default_factory=dict)
    annotations: dict = field(default_factory=dict)
    target_phase: str = RUNNING

    def __post_init__(self):
        for what, mapping in (("container_images", self.container_images),
                              ("labels", self.labels), ("annotations", self.annotations)):
            if not isinstance(mapping, dict) or not all(
                    isinstance(k, str) and isinstance(v, str) for k, v in mapping.items()):
                raise ValueError(f"{what} must map strings to strings")
        for name, image in self.container_images.items():
            if not _CONTAINER.match(name):
                raise ValueError(f"container_images: {name!r} is not a container name")
            if not image.strip():
                raise ValueError(f"container_images: no image for container {name!r}")
        for what, mapping in (("labels", self.labels), ("annotations", self.annotations)):
            for key in mapping:
                if not _KEY.match(key):
                    raise ValueError(f"{what}: {key!r} is not a valid key")
                if key in _OURS:
                    raise ValueError(f"{what}: {key!r} belongs to the pool scheduler")
        for key, value in self.labels.items():
            if not _VALUE.match(value):
                raise ValueError(f"labels: {value!r} (for {key!r}) is not a valid label value")
        if self.target_phase not in CLAIM_PHASES:
            raise ValueError(f"target_phase must be one of {', '.join(CLAIM_PHASES)}, "
                             f"not {self.target_phase!r}")


@dataclass
class ClaimResult:
    """How a claim ended: `pod` (the API server's reply) on success, else `error`.
    outcome: success | hard | expired | shutdown."""
    ok: bool
    outcome: str
    pod: dict | None = None
    key: str = ""
    error: str = ""
    latency: float = 0.0     # seconds from enqueue to the claim's success
    attempts: int = 0        # pods tried


@dataclass(eq=False)
class ClaimRequest:
    """One pending claim. `deadline` is on the scheduler's clock; `cancelled` (the
    caller gave up: its context is done) makes it fail like a passed deadline; `reply`
    gets the result exactly once, from whichever thread ends the claim."""
    options: ClaimOptions
    deadline: float
    reply: Callable[[ClaimResult], None]
    cancelled: threading.Event | None = None
    enqueued_at: float | None = None
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    attempts: int = 0

    def expired(self, now: float) -> bool:
        return now >= self.deadline or (self.cancelled is not None and self.cancelled.is_set())


class ClaimWaiter:
    """A `reply` for callers that block: pass it as `reply`, then `wait()`."""

    def __init__(self):
        self._done = threading.Event()
        self.result: ClaimResult | None = None

    def __call__(self, result: ClaimResult) -> None:
        self.result = result
        self._done.set()

    def wait(self, timeout: float | None = None) -> ClaimResult | None:
        self._done.wait(timeout)
        return self.result


def claim_patch(pod: PoolPod, options: ClaimOptions, claim_id: str) -> dict:
    """The compare-and-swap a claim writes (a strategic merge patch): it applies only if
    the pod is still at the resourceVersion at which it was seen idle."""
    meta = {"resourceVersion": pod.resource_version,
            "labels": {**options.labels, PHASE_LABEL: options.target_phase},
            "annotations": {**options.annotations, CLAIM_ANNOTATION: claim_id}}
    body = {"metadata": meta}
    if options.container_images:
        body["spec"] = {"containers": [{"name": name, "image": image}
                                       for name, image in options.container_images.items()]}
    return body
