"""warmpool: a streaming claim scheduler for pools of idle, pre-started pods.

Standard library only, no I/O of its own (the caller passes the claimer that talks
to the API server), time passed in where it matters. One concept per module:
podstate (how a pod is in a pool and idle), ready (the ready queue), reservations
(the TTL map), claims (options, requests, results, the CAS patch), members (a
pool's pods as the watch shows them), metrics, scheduler (PoolScheduler).
"""
from .claims import (ClaimConflict, ClaimOptions, ClaimRefused, ClaimRequest, ClaimResult,
                     ClaimWaiter, claim_patch)
from .members import PoolMembers
from .metrics import LatencyHistogram, PoolMetrics
from .podstate import PoolPod, digest
from .ready import ReadyQueue
from .reservations import Reservations
from .scheduler import PoolScheduler

__all__ = ["ClaimConflict", "ClaimOptions", "ClaimRefused", "ClaimRequest", "ClaimResult",
           "ClaimWaiter", "LatencyHistogram", "PoolMembers", "PoolMetrics", "PoolPod",
           "PoolScheduler", "ReadyQueue", "Reservations", "claim_patch", "digest"]
