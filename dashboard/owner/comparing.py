"""The comparer: the cache against fresh lists of the cluster, drift recorded and healed.

The lists are taken off the owner's thread (`start`) and queued on the feed behind
what the watch had delivered by then, so the comparison meets a cache that has caught
up with them. The owner's thread only takes the cache's dump there (copy-on-write
copies of the nodes: O(nodes), and they never change after); the comparison itself
(every pod, every node's aggregates rebuilt: seconds at 600,000 pods, which once held
reap commands 6.6 s and lost the lease) runs in a thread of its own and queues its
report on the feed (`Compared`), which the owner's thread settles and records
(`record`): what the cache has caught up on by then, ahead of the lists or after
having been behind them, is not drift (`_settled`). Beside the cache, the read model's
rows are compared with the same dump (`row_drift.py`) once the owner has written its rows
of every pod and node (pruned); rows found wrong are rewritten. The owner's pending pods
are compared too, and what drifted is fetched again (`drift_repair.py`).
"""
import logging
import threading
from dataclasses import dataclass

from django.db import DatabaseError, connections

from schedcache import compare_dump

from dashboard.owner import drift_repair, row_drift
from dashboard.owner.commands import CommandError
from dashboard.owner.decoder import compared_pod
from dashboard.owner.journal import utc
from dashboard.owner.listed_pages import ListedPages
from dashboard.owner.pending_pods import held_info

log = logging.getLogger(__name__)


@dataclass
class CompareRequest:
    """Lists taken for a comparison, to be compared once the feed has caught up with them."""
    nodes: ListedPages            # decoder.comparable_node()s
    pods: ListedPages             # decoder.comparable_pod()s: each use reads them anew
    resource_version: str
    watch_behind: bool = False    # compared without the watch passing the lists' version


@dataclass
class Compared:
    """A comparison made off the owner's thread, for the owner to settle and record."""
    request: CompareRequest
    report: object                # schedcache.CompareReport
    rows: dict | None             # row_drift.compare_rows' findings; None: not compared
    pending: drift_repair.PendingDrift   # the owner's pending pods against the lists
    names: dict                   # uid -> (namespace, name) of the pods found missed


@dataclass
class CompareFailed:
    """A comparison that could not be made: recorded, so the pages show the failure."""
    error: str


def _version(rv):
    """A resourceVersion as a number, for "newer than"; None where it is not one."""
    try:
        return int(rv)
    except (TypeError, ValueError):
        return None


def newer(rv, than) -> bool:
    a, b = _version(rv), _version(than)
    return a is not None and b is not None and a > b


def _rv(obj):
    return (obj.get("metadata") or {}).get("resourceVersion") or ""


class Comparer:
    """`lister()` -> CompareRequest (from the API server, slow: run in a thread of its
    own); `heal(kind, keys)` is called for each kind a comparison finds drifted, with the
    keys to fetch again or None to relist (drift_repair.repair_plan); `pending` the owner's
    pending pods; `removed` is the feed's record of removals; `overdue()` the binds stuck past time;
    `rows` the owner's ReadModelRows, written by `writer` (None: no rows to compare), once
    `rows_written()` says every row has been written once."""

    def __init__(self, cache, journal, feed, removed, overdue, clock, *, pending, rows=None,
                 writer=None, rows_written=lambda: False):
        self.cache = cache
        self.pending = pending
        self.rows, self.writer, self.rows_written = rows, writer, rows_written
        self.journal = journal
        self.feed = feed
        self.removed = removed
        self.overdue = overdue
        self.clock = clock
        self.lister = None
        self.heal = None
        self.latest_report = None
        self._busy = threading.Event()

    def start(self) -> dict:
        """List in the background; the lists join the feed (or why they could not)."""
        if self.lister is None:
            raise CommandError(503, "this owner has no lister for comparisons")
        if self._busy.is_set():
            return {"started": False, "reason": "a comparison is already running"}
        self._busy.set()

        def run():
            try:
                self.feed.put(self.lister())
            except Exception as exc:
                log.warning("comparer could not list the cluster: %s", exc)
                self.feed.put(CompareFailed(f"could not list the cluster: "
                                            f"{type(exc).__name__}: {exc}"))
        threading.Thread(target=run, name="comparer-list", daemon=True).start()
        return {"started": True}

    def compare(self, request: CompareRequest):
        """Compare the cache as it is now (the feed caught up with the lists) with the
        lists, in a thread of its own; its `Compared` (or `CompareFailed`) joins the feed."""
        self._busy.set()
        dump = self.cache.dump()
        held = {entry.info.key: entry.info.resource_version for entry in self.pending.entries()}
        rows_at = (self.rows.at_dump(self.writer.submitted())
                   if self.writer is not None and self.rows_written() else None)

        def run():
            try:
                # Not the owner's pending map: a pod it wrongly believes unbound is
                # exactly the drift to find.
                report = compare_dump(dump, request.nodes, map(compared_pod, request.pods))
                pending = drift_repair.pending_drift(held, request.pods)
                names = drift_repair.listed_names(request.pods,
                                                  [*report.missed_pods, *pending.missed])
                self.feed.put(Compared(request, report, self._compare_rows(dump, rows_at),
                                       pending, names))
            except Exception as exc:   # noqa: BLE001 - a bug, recorded where it shows
                log.exception("the comparison failed")
                self.feed.put(CompareFailed(f"the comparison failed: "
                                            f"{type(exc).__name__}: {exc}"))
        threading.Thread(target=run, name="comparer", daemon=True).start()

    def _compare_rows(self, dump, rows_at):
        """The rows against the dump (in the comparison's thread), once the writer has
        written what it was handed before the dump; None when they are not compared."""
        if rows_at is None:
            return None
        if not self.writer.wait_written(rows_at.submitted, row_drift.WRITER_WAIT):
            log.warning("the writer did not catch up in %.0f s: rows not compared",
                        row_drift.WRITER_WAIT)
            return None
        try:
            return row_drift.compare_rows(dump, rows_at, *row_drift.read_rows())
        except DatabaseError as exc:
            # The cache's comparison stands without them; the writer's own retries say
            # the database is down.
            log.warning("the read model's rows could not be read: rows not compared: %s", exc)
            return None
        finally:
            connections.close_all()     # this thread's connections only: it ends here

    def record(self, compared: Compared):
        """Record a comparison's outcome, what changed since the lists set aside (in the
        owner's thread: it reads the cache's current versions); drift asks for a relist."""
        request = compared.request
        try:
            report = self._settled(compared.report, request.resource_version)
            pending = self._settled_pending(compared.pending, request.resource_version)
            # An assumed pod whose bind is overdue is drift too, though a relist cannot heal
            # it (the pod is still unbound in the cluster): the bind deadline does.
            overdue = [uid for uid, _ in self.overdue()]
            rows = (row_drift.settle(compared.rows, self.rows)
                    if compared.rows is not None else {})
            details = dict(report.as_dict(), **pending.as_dict(), overdue_binds=overdue,
                           watch_behind=request.watch_behind,
                           rows_compared=compared.rows is not None, **rows)
            rows_wrong = any(rows.values())
            details["clean"] = report.clean and pending.clean and not overdue and not rows_wrong
            self.journal.batch.comparer_runs.append(
                {"at": utc(self.clock()), "clean": details["clean"], "report": details,
                 "error": ""})
            self.latest_report = report
            if rows_wrong:
                log.warning("the read model's rows drifted from the cache; rewriting: %s",
                            {k: len(v) for k, v in rows.items() if v})
                row_drift.repair(rows, self.rows)
            if not (report.clean and pending.clean):
                self._heal(report, pending, compared.names, request)
        finally:
            self._busy.clear()

    def _heal(self, report, pending, names, request):
        """Fetch again what drifted, or relist a kind where that is most of it."""
        plan = drift_repair.repair_plan(report, pending, names, self._held_name,
                                        {"pods": len(request.pods), "nodes": len(request.nodes)})
        log.warning("the cache drifted from the cluster (%s); %s",
                    {k: len(v) for k, v in dict(report.as_dict(), **pending.as_dict()).items()
                     if isinstance(v, list) and v},
                    ", ".join(f"relisting the {kind}" if keys is None
                              else f"fetching {len(keys)} {kind} again"
                              for kind, keys in plan.items())
                    or "nothing to fetch: node aggregates no list heals")
        if self.heal is not None:
            for kind, keys in plan.items():
                self.heal(kind, keys)

    def _held_name(self, uid):
        """(namespace, name) of a pod the owner holds, pending or cached; else None."""
        info = held_info(self.pending, self.cache, uid)
        return (info.namespace, info.name) if info is not None else None

    def failed(self, failure: CompareFailed):
        """A comparison that could not be made is recorded as such."""
        self.journal.batch.comparer_runs.append({"at": utc(self.clock()), "clean": False,
                                                 "report": {}, "error": failure.error})
        self._busy.clear()

    def _settled(self, report, listed_at):
        """Keep only what the cache still gets wrong now, as the owner settles the report:
        what changed after the lists were taken is the feed being ahead, and what changed
        before them but reached the cache only after its dump is the feed having been
        behind. Under load the decoder ran seconds behind the API server, and every pod
        changed in those seconds read as drift: a relist of 600,000 pods every comparison
        (issue 26). Real drift stays: a lost event does not heal by itself."""
        def pod_rv(uid):
            info = self.cache.pod_info(uid)
            return info.resource_version if info is not None else ""

        def pod_node(uid):
            info = self.cache.pod_info(uid)
            return info.node_name if info is not None else None

        def node_rv(name):
            info = self.cache.node_info(name)
            return _rv(info.node) if info is not None and info.has_node else ""

        def held(now):
            """The cache holds it now ("": it does not), at no version past the lists'."""
            return bool(now) and not newer(now, listed_at)

        def still_older(now, cluster_rv):
            """Held now, at neither the cluster's version nor a later one."""
            return held(now) and now != cluster_rv

        report.stale_pods = [s for s in report.stale_pods if still_older(pod_rv(s[0]), s[2])]
        report.wrong_node_pods = [w for w in report.wrong_node_pods if pod_node(w[0]) == w[1]]
        report.redundant_pods = [u for u in report.redundant_pods if held(pod_rv(u))]
        report.missed_pods = [u for u in report.missed_pods
                              if not pod_rv(u) and not newer(self.removed.get(u), listed_at)]
        report.stale_nodes = [s for s in report.stale_nodes if still_older(node_rv(s[0]), s[2])]
        report.redundant_nodes = [n for n in report.redundant_nodes if held(node_rv(n))]
        report.missed_nodes = [n for n in report.missed_nodes
                               if not node_rv(n) and not newer(self.removed.get(n), listed_at)]
        return report

    def _settled_pending(self, drift, listed_at):
        """_settled for the pending pods: what the owner has caught up on by now is not
        drift."""
        def pending_rv(uid):
            entry = self.pending.entry(uid)
            return entry.info.resource_version if entry is not None else ""

        def held(now):
            return bool(now) and not newer(now, listed_at)

        drift.missed = [u for u in drift.missed if not pending_rv(u)
                        and self.cache.pod_info(u) is None
                        and not newer(self.removed.get(u), listed_at)]
        drift.redundant = [u for u in drift.redundant if held(pending_rv(u))]
        drift.stale = [s for s in drift.stale
                       if held(pending_rv(s[0])) and pending_rv(s[0]) != s[2]]
        return drift
