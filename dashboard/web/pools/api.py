"""Warm pools over REST: claim an idle pod, and the pools' status.

A claim waits (up to its `timeout`) for the pools process to hand it a pod; the
answer is the claimed pod, 429 with Retry-After when the pool's queue is full, or
504 when no pod could be claimed in time. Status is what the pools process last
published (503 when it is not running).
"""
from typing import Annotated, Literal

from django.http import HttpResponse
from ninja import Router, Schema, Status
from ninja.params import Path
from pydantic import Field, StringConstraints

from warmpool.podstate import CLAIM_PHASES

from dashboard.clients import pools_transport as transport
from dashboard.web.api.auth import require_act
from dashboard.web.api.errors import ApiError
from dashboard.web.api.schemas import ErrorOut, ValidationErrorOut, example

router = Router(tags=["pools"])

# A pool is named by a label value.
PoolName = Annotated[str, StringConstraints(
    min_length=1, max_length=63, pattern=r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")]


class ClaimIn(Schema):
    images: dict[str, str] = Field({}, description="container name -> image to run")
    labels: dict[str, str] = Field({}, description="labels merged into the pod's")
    annotations: dict[str, str] = Field({}, description="annotations merged into the pod's")
    target_phase: Literal[CLAIM_PHASES] = Field("Running", description="the pool phase "
                                                                       "the pod moves to")
    timeout: float = Field(5.0, gt=0, le=transport.MAX_TIMEOUT,
                           description="seconds to wait for an idle pod")
    model_config = example({"images": {"main": "nginx:1.27"}, "labels": {"team": "search"},
                            "timeout": 5})


class ClaimedPod(Schema):
    namespace: str
    name: str
    uid: str | None
    resourceVersion: str | None
    nodeName: str | None
    labels: dict[str, str]
    annotations: dict[str, str]
    images: dict[str, str | None]


class ClaimOut(Schema):
    pod: ClaimedPod
    latency_ms: float = Field(description="enqueue to claim, in the pools process")
    attempts: int = Field(description="pods tried (conflicts make it more than 1)")


class LatencyOut(Schema):
    bounds: list[float] = Field(description="upper bounds of the buckets, in seconds")
    counts: list[int] = Field(description="one per bound, and one for the rest")
    total: int
    sum: float
    p50: float | None
    p99: float | None


class MetricsOut(Schema):
    latency: LatencyOut
    outcomes: dict[str, int] = Field(description="success, retriable, hard, expired, shutdown")
    refreshes: int
    polls: int
    reservations_expired: int
    refused: int


class ReservationOut(Schema):
    key: str
    remaining: float = Field(description="seconds left")


class PoolOut(Schema):
    pool: str
    members: int
    idle_ready: int
    ready_head: list[str] = Field(description="the first idle pods, next claimed first")
    queue_length: int
    capacity: int
    claims_in_flight: int
    max_inflight: int
    reserved: int = Field(description="pods reserved now")
    reservations: list[ReservationOut] = Field(description="the first of them to expire")
    reservation_ttl: float
    last_dispatch_ago: float | None = Field(description="seconds since the last claim")
    poll_interval: float
    shutting_down: bool
    metrics: MetricsOut


CLAIM_ERRORS = {400: ValidationErrorOut, 401: ErrorOut, 403: ErrorOut, 404: ErrorOut,
                429: ErrorOut, 502: ErrorOut, 503: ErrorOut, 504: ErrorOut}


@router.post("/{pool}/claims", response={200: ClaimOut, **CLAIM_ERRORS},
             summary="Claim an idle pod of a pool")
def claim(request, pool: Path[PoolName], body: ClaimIn, response: HttpResponse):
    """Hands the longest-idle pod of `pool` to this request, changed as asked (a
    compare-and-swap on the API server); waits up to `timeout` seconds for one."""
    require_act(request)
    options = {"container_images": body.images, "labels": body.labels,
               "annotations": body.annotations, "target_phase": body.target_phase}
    try:
        return transport.request_claim(pool, options, body.timeout,
                                       actor=request.user.get_username())
    except transport.PoolsError as error:
        if error.retry_after is not None:
            response["Retry-After"] = str(error.retry_after)
        return Status(error.status, {"error": error.message})


def _statuses() -> dict:
    published = transport.read_status()
    if published is None:
        raise ApiError(503, "the pool scheduler (manage.py pools) is not running")
    return published["pools"]


@router.get("", response={200: list[PoolOut], 401: ErrorOut, 503: ErrorOut},
            summary="Every pool's status")
def pools(request):
    return [status for _, status in sorted(_statuses().items())]


@router.get("/{pool}", response={200: PoolOut, 400: ValidationErrorOut, 401: ErrorOut,
                                 404: ErrorOut, 503: ErrorOut}, summary="One pool's status")
def pool(request, pool: Path[PoolName]):
    status = _statuses().get(pool)
    if status is None:
        raise ApiError(404, f"no pool named {pool!r}")
    return status
