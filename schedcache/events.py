"""The cache's transition stream: one event per transition, numbered.

Subscribers are called synchronously under the cache's lock, in sequence
order, so they see exactly the order of the changes; they must be quick (hand
the event to a queue) and must not block. `seq` grows by one per event across
the whole cache, so a follower can tell a gap from a duplicate.
"""
from typing import NamedTuple, Optional

# Pod states of the scheduler cache's state machine. Initial, Expired and Deleted pods are
# not held by the cache; they appear only as the ends of transitions.
INITIAL, ASSUMED, ADDED, EXPIRED, DELETED = "Initial", "Assumed", "Added", "Expired", "Deleted"

POD_ASSUMED = "pod_assumed"          # Initial -> Assumed
POD_BINDING_FINISHED = "pod_binding_finished"  # Assumed, expiry clock started
POD_CONFIRMED = "pod_confirmed"      # Assumed -> Added (the watch saw the bound pod)
POD_ADDED = "pod_added"              # Initial or Expired -> Added
POD_UPDATED = "pod_updated"          # Added -> Added
POD_FORGOTTEN = "pod_forgotten"      # Assumed -> Initial (binding failed)
POD_EXPIRED = "pod_expired"          # Assumed -> Expired (no confirmation within the ttl)
POD_REMOVED = "pod_removed"          # Added or Assumed -> Deleted
NODE_ADDED, NODE_UPDATED, NODE_REMOVED = "node_added", "node_updated", "node_removed"
SNAPSHOT_UPDATED = "snapshot_updated"


class CacheEvent(NamedTuple):
    seq: int
    kind: str
    key: str                 # pod uid; node name for node events; "" for snapshots
    namespace: str = ""
    name: str = ""           # pod name, or node name
    node: str = ""           # the node the pod is (or was) on
    from_state: Optional[str] = None
    to_state: Optional[str] = None
    generation: int = 0      # cache generation after the change (snapshot's, for snapshots)
    at: Optional[float] = None  # set where the cache was told the time (expiry, binding)

    def as_dict(self) -> dict:
        return self._asdict()


class EventBus:
    """Numbers events and hands them to subscribers."""

    __slots__ = ("seq", "_subscribers")

    def __init__(self):
        self.seq = 0
        self._subscribers = ()

    def subscribe(self, callback):
        """Call `callback(event)` for every later event; returns the unsubscribe function."""
        self._subscribers = self._subscribers + (callback,)

        def unsubscribe():
            self._subscribers = tuple(s for s in self._subscribers if s is not callback)
        return unsubscribe

    def emit(self, kind, key, namespace="", name="", node="", from_state=None, to_state=None,
             generation=0, at=None):
        self.seq += 1
        if self._subscribers:
            event = CacheEvent(self.seq, kind, key, namespace, name, node, from_state, to_state,
                               generation, at)
            for callback in self._subscribers:
                callback(event)
