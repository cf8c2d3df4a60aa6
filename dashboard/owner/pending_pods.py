"""The pending pods: what the watch shows without a node and the cache does not hold.

Each is kept as the cache's digest (a PodInfo, about 1 kB) with what is read of every
pending pod at once (its place in kube-scheduler's queue, the claims it names, the node it
is nominated to, the signature the sweep of reasons shares a diagnosis by), not as the pod
Mapping it thaws to (about 7 kB): under churn tens of thousands pend together (66,000 at
20,000 nodes, issue 26). A read by uid thaws a fresh Mapping, so no reader changes what
another reads.
"""
from collections.abc import Mapping
from typing import NamedTuple

from schedcache.podinfo import PodInfo
from scheduling.diagnosis import claim_keys
from scheduling.queue_sort import queue_key

from dashboard.owner.pending_reasons import signature


def lean_pod(info: PodInfo, annotations) -> dict:
    """A digested pod as a Mapping, with the annotations its record kept."""
    pod = info.pod
    if annotations:
        pod["metadata"]["annotations"] = annotations
    return pod


class PendingPod(NamedTuple):
    info: PodInfo
    annotations: dict | None     # what the decoder's record kept (the bind-info annotation)
    order: tuple                 # scheduling.queue_sort.queue_key(): (-priority, created,
                                 # namespace, name)
    claims: tuple                # scheduling.diagnosis.claim_keys()
    nominated: str               # status.nominatedNodeName, "" if none (the dump's)
    signature: int               # hash(pending_reasons.signature()): 8 bytes where the
                                 # signature is hundreds; two pods' colliding (odds of
                                 # 1e-10 at 66,000) would share a diagnosis for a sweep

    @property
    def pod(self) -> dict:
        return lean_pod(self.info, self.annotations)


def held_info(pending: "PendingPods", cache, uid) -> PodInfo | None:
    """The digest of the pod as the owner holds it: pending, else in the cache."""
    entry = pending.entry(uid)
    return entry.info if entry is not None else cache.pod_info(uid)


class PendingPods(Mapping):
    """uid -> the pending pod's Mapping, thawed on each read; `entries()` for what is read
    of all of them (the queue's order, the claims, the nominations) without thawing any."""

    def __init__(self):
        self._by_uid = {}        # uid -> PendingPod
        self._by_name = {}       # (namespace, name) -> uid

    def __getitem__(self, uid) -> dict:
        return self._by_uid[uid].pod

    def __contains__(self, uid) -> bool:
        return uid in self._by_uid

    def __iter__(self):
        return iter(self._by_uid)

    def __len__(self) -> int:
        return len(self._by_uid)

    def entries(self):
        return self._by_uid.values()

    def entry(self, uid) -> PendingPod | None:
        return self._by_uid.get(uid)

    def uid_named(self, namespace: str, name: str):
        return self._by_name.get((namespace, name))

    def put(self, info: PodInfo, annotations) -> None:
        pod = lean_pod(info, annotations)
        try:
            order = queue_key(pod)
        except KeyError:     # no name, which no API server sends: first among its equals
            order = (-info.priority, "", info.namespace, "")
        self._by_uid[info.key] = PendingPod(
            info, annotations or None, order, tuple(claim_keys(pod)),
            (pod.get("status") or {}).get("nominatedNodeName") or "", hash(signature(pod)))
        self._by_name[(info.namespace, info.name)] = info.key

    def pop(self, uid) -> PendingPod | None:
        entry = self._by_uid.pop(uid, None)
        if entry is not None:
            self._by_name.pop((entry.info.namespace, entry.info.name), None)
        return entry
