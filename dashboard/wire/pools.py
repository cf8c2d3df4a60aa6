"""Claims of warm-pool pods, from the web to the pools process, and the pools' status.

A claim is a request (requests.py) on the list keys.pool_claims(pool) whose fields
are `{"pool": "web", "options": {ClaimOptions' fields}, "actor": "alice"}`; it must
have a deadline. Its reply (keys.pool_reply(id)) holds the claimed pod's summary, or
a refusal: 400 malformed, 429 the pool's queue is full (with retry_after), 502 the
claim failed, 503 the pools process is shutting down, 504 no pod in time.

The pools process publishes every pool's status under keys.POOLS_STATUS, expiring,
so a dead process reads as "not running".
"""
from dataclasses import dataclass

import orjson

from warmpool import ClaimOptions, ClaimResult

from dashboard.wire.keys import POOLS_STATUS, POOLS_STATUS_TTL
from dashboard.wire.requests import MalformedMessage, Reply, Request, require_fields

RETRY_AFTER = 1         # seconds a refused caller should wait
MAX_TIMEOUT = 60.0      # seconds: the longest a claim may wait

_SHAPE = {"pool": str, "options": dict, "actor": str}
_FAILURE_STATUS = {"expired": 504, "hard": 502, "shutdown": 503}


@dataclass(frozen=True)
class Claim:
    pool: str
    options: ClaimOptions
    actor: str

    @classmethod
    def of(cls, pool: str, options: dict, actor: str) -> "Claim":
        """A claim of these ClaimOptions fields; ValueError when they are not valid."""
        try:
            return cls(pool, ClaimOptions(**options), actor)
        except TypeError as error:      # an unknown field
            raise ValueError(str(error)) from None

    def body(self) -> dict:
        # vars, not dataclasses.asdict, whose deep copy costs the web about 25 us a claim
        return {"pool": self.pool, "options": vars(self.options), "actor": self.actor}

    @classmethod
    def from_request(cls, request: Request) -> "Claim":
        """The request's claim; MalformedMessage when it is not a claim's or has no
        deadline."""
        require_fields(request.body, _SHAPE)
        if request.deadline is None:
            raise MalformedMessage("a claim needs a deadline")
        try:
            return cls.of(request.body["pool"], request.body["options"], request.body["actor"])
        except ValueError as error:
            raise MalformedMessage(str(error)) from None

    def __str__(self):
        return f"pool {self.pool} by {self.actor}"


def pod_summary(pod: dict) -> dict:
    """What a claimer needs of the claimed pod."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    return {"namespace": meta.get("namespace"), "name": meta.get("name"),
            "uid": meta.get("uid"), "resourceVersion": meta.get("resourceVersion"),
            "nodeName": spec.get("nodeName"), "labels": meta.get("labels") or {},
            "annotations": meta.get("annotations") or {},
            "images": {c.get("name"): c.get("image") for c in spec.get("containers") or ()}}


def claim_reply(result: ClaimResult) -> Reply:
    """The reply that tells the claimer how its claim ended."""
    if result.ok:
        return Reply.success({"pod": pod_summary(result.pod),
                              "latency_ms": round(result.latency * 1000, 3),
                              "attempts": result.attempts})
    return Reply.refusal(_FAILURE_STATUS[result.outcome], result.error,
                         RETRY_AFTER if result.outcome == "shutdown" else None)


def queue_full(pool: str) -> Reply:
    return Reply.refusal(429, f"pool {pool!r} has too many claims waiting; try again later",
                         RETRY_AFTER)


def publish_status(client, statuses: dict, at: float) -> None:
    """Publish every pool's status ({pool: PoolScheduler.status()}) as of `at`."""
    client.set(POOLS_STATUS, orjson.dumps({"at": at, "pools": statuses}),
               px=int(POOLS_STATUS_TTL * 1000))


def published_status(client) -> dict | None:
    """{"at": epoch seconds, "pools": {pool: status}} as last published; None if the pools
    process is not running. Raises redis's errors."""
    raw = client.get(POOLS_STATUS)
    return orjson.loads(raw) if raw else None
