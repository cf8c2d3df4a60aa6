"""The cache's dump, as kube-scheduler's cache debugger writes it on SIGUSR2 (upstream's
pkg/scheduler/backend/cache/debugger/dumper.go): each node with its requested and
allocatable resources, its pods and the pending pods nominated to it; the pending pods;
and the comparer's latest verdict (upstream compares on the same signal).

Upstream logs everything at once. Thousands of nodes would hold the owner's loop and
make one huge message, so here the dump is read a page at a time (`dump_page`, the
`dump_cache` command: nodes by name, pending pods by uid, after a cursor), each page
stamped with the sequence number and generation it was taken at: pages are taken at
different moments, and a reader tells them apart by `seq`. SIGUSR2 (`DumpSignal`) makes
the owner log only the summary; the whole dump is `manage.py dumpcache`.
"""
import heapq
import logging
import signal

from dashboard.owner.commands import CommandError
from dashboard.owner.pod_ref import pod_ref
from dashboard.wire.cache_dump import DEFAULT_LIMIT, MAX_LIMIT, NODES, PARTS

log = logging.getLogger(__name__)


def dump_page(owner, args: dict) -> dict:
    """One page of the dump: args `part` (nodes or pending), `after` (the last name or uid
    of the page before; "" for the first) and `limit`; `next` is the cursor of the page
    after, None on the last. O(nodes + pending) for the cursor and the nominated pods."""
    part, after = args.get("part", NODES), args.get("after", "")
    limit = args.get("limit", DEFAULT_LIMIT)
    if part not in PARTS:
        raise CommandError(400, f"part must be one of {', '.join(PARTS)}")
    if not isinstance(after, str):
        raise CommandError(400, "after must be a string (the last name or uid of a page)")
    if type(limit) is not int or not 1 <= limit <= MAX_LIMIT:
        raise CommandError(400, f"limit must be a whole number from 1 to {MAX_LIMIT}")
    # one more than asked: whether a page follows, without an empty last page
    items = (_nodes(owner, after, limit + 1) if part == NODES
             else _pending(owner.pending, after, limit + 1))
    more = len(items) > limit
    items = items[:limit]
    key = "name" if part == NODES else "uid"
    return dict(_header(owner), part=part, items=items,
                next=items[-1][key] if more else None)


def _header(owner) -> dict:
    cache = owner.cache
    return {"seq": owner.seq_base + cache.event_seq, "generation": cache.generation,
            "counts": {"nodes": cache.node_count(), "pods": cache.pod_count(),
                       "assumed": cache.assumed_count(), "pending": len(owner.pending)},
            "comparer": verdict(owner.latest_report)}


def verdict(report) -> dict | None:
    """The latest comparison's outcome: clean, and how many of each finding (the findings
    themselves are the comparer's run in the database, GET /api/v1/comparer); None before
    the first."""
    if report is None:
        return None
    return {"clean": report.clean,
            "found": {kind: len(found) for kind, found in report.as_dict().items()
                      if isinstance(found, list)}}


def _pending_pod(entry) -> dict:
    """A pending pod (a PendingPod) as the dump lists it, read without a thaw."""
    info = entry.info
    return {"uid": info.key, "namespace": info.namespace, "name": info.name,
            "priority": info.priority, "nominated_node": entry.nominated}


def _pending(pending, after: str, limit: int) -> list:
    uids = heapq.nsmallest(limit, (uid for uid in pending if uid > after))
    return [_pending_pod(pending.entry(uid)) for uid in uids]


def _nodes(owner, after: str, limit: int) -> list:
    cache = owner.cache
    infos = cache.node_infos_after(after, limit)
    # The pods kube-scheduler nominated to these nodes (a preemption's status.nominatedNodeName):
    # upstream's dump takes them from its queue, ours are the pending pods the watch shows.
    nominated = {info.name: [] for info in infos}
    for entry in owner.pending.entries():
        if entry.nominated in nominated:
            nominated[entry.nominated].append(_pending_pod(entry))
    assumed = cache.assumed_count() > 0
    return [{"name": info.name, "deleted": not info.has_node, "generation": info.generation,
             "requested": info.requested.as_dict(), "allocatable": info.allocatable.as_dict(),
             "pods": [{"uid": p.key, "namespace": p.namespace, "name": p.name, "phase": p.phase,
                       "assumed": assumed and cache.is_assumed_pod(pod_ref(p.key))}
                      for p in info.pods],
             "nominated_pods": nominated[info.name]}
            for info in infos]


def summary(owner) -> str:
    """The dump in one line: what SIGUSR2 logs."""
    header = _header(owner)
    counts = header["counts"]
    nominated = sum(1 for entry in owner.pending.entries() if entry.nominated)
    report = header["comparer"]
    compared = ("not compared yet" if report is None else "clean" if report["clean"] else
                "drift: " + ", ".join(f"{n} {kind}" for kind, n in report["found"].items() if n))
    return (f"cache dump at seq {header['seq']}, generation {header['generation']}: "
            f"{counts['nodes']} nodes, {counts['pods']} pods ({counts['assumed']} assumed), "
            f"{counts['pending']} pending ({nominated} nominated); comparer: {compared}; "
            f"the whole dump: manage.py dumpcache")


class DumpSignal:
    """SIGUSR2, as kube-scheduler takes it. The handler only raises a flag (it may interrupt
    the main thread anywhere, so it takes no lock and does no work); the owner's loop takes
    the flag and logs the summary."""

    def __init__(self):
        self.raised = False

    def install(self) -> "DumpSignal":
        signal.signal(signal.SIGUSR2, self._raise)
        return self

    def _raise(self, signum, frame):
        self.raised = True

    def take(self) -> bool:
        """Whether a dump was asked for since the last take."""
        raised, self.raised = self.raised, False
        return raised

    def serve(self, owner):
        if self.take():
            log.info("%s", summary(owner))
