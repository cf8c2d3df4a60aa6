"""How a pod belongs to a warm pool and what state it is in, written on the pod itself.

A pool is the set of pods labelled `schedview.io/pool=<pool>`. Their pool phase is
the label `schedview.io/phase` (a label, so a selector can find the idle ones):

    Idle      started and waiting to be claimed
    Running   claimed (or Paused: claimed and parked)
    Stopping  handed back, being reset; whoever resets it sets Idle again

`schedview.io/idle-since` (seconds since the epoch) says when it last turned idle,
which orders the idle pods found by a list; watch events order the rest.
`schedview.io/scale-down-protected: "true"` keeps a pod out of claims (it is being
kept for something else). A claim stamps `schedview.io/claim` with its id.
"""
from dataclasses import dataclass

POOL_LABEL = "schedview.io/pool"
PHASE_LABEL = "schedview.io/phase"
IDLE_SINCE_ANNOTATION = "schedview.io/idle-since"
PROTECTED_ANNOTATION = "schedview.io/scale-down-protected"
CLAIM_ANNOTATION = "schedview.io/claim"

IDLE, RUNNING, PAUSED, STOPPING = "Idle", "Running", "Paused", "Stopping"
CLAIM_PHASES = (RUNNING, PAUSED)   # what a claim may turn an idle pod into


@dataclass(frozen=True, slots=True)
class PoolPod:
    """What a scheduler needs of one pool pod (digested once per watch event)."""
    namespace: str
    name: str
    pool: str
    phase: str
    resource_version: str
    protected: bool = False
    idle_since: float = 0.0
    deleting: bool = False

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def claimable(self) -> bool:
        """Idle, not protected from scale-down and not on its way out."""
        return self.phase == IDLE and not self.protected and not self.deleting


def digest(obj: dict) -> PoolPod | None:
    """The PoolPod of a pod object as the API server sends it; None if it is in no pool."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(meta, dict):
        return None
    labels = meta.get("labels") or {}
    pool = labels.get(POOL_LABEL)
    if not pool or not meta.get("name") or not meta.get("namespace"):
        return None
    annotations = meta.get("annotations") or {}
    try:
        idle_since = float(annotations.get(IDLE_SINCE_ANNOTATION, 0) or 0)
    except (TypeError, ValueError):
        idle_since = 0.0
    return PoolPod(namespace=meta["namespace"], name=meta["name"], pool=pool,
                   phase=labels.get(PHASE_LABEL, ""),
                   resource_version=str(meta.get("resourceVersion", "")),
                   protected=str(annotations.get(PROTECTED_ANNOTATION, "")).lower() == "true",
                   idle_since=idle_since, deleting=bool(meta.get("deletionTimestamp")))
