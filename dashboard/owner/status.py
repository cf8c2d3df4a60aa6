"""The owner's published status: what the overview, the health checks, the metrics and
the `status` command read (a few dozen numbers, built every flush)."""
from dashboard.owner.rows import zone_display

TOP_REASONS = 3   # the pending reasons published with their summaries (health, overview)


def owner_status(owner) -> dict:
    """`owner`: the CacheOwner."""
    cache = owner.cache
    stuck = owner.stuck_binds()
    # The tree holds exactly the nodes with a Node object: counted, not listed, each flush.
    return {"nodes": cache.node_tree.num_nodes, "node_infos": cache.node_count(),
            "pods": cache.pod_count(), "assumed": cache.assumed_count(),
            "pending": len(owner.pending), "pending_changes": owner.applier.pending_changes,
            "pending_sweeps": owner.pending_reasons.sweeps, "generation": cache.generation,
            "snapshot_generation": owner.snapshot.generation,
            "seq": owner.seq_base + cache.event_seq, "synced": all(owner.synced.values()),
            "feed_backlog": owner.feed.qsize(), "feed_lag": owner.feed_lag.seconds(owner.clock()),
            "read_model_backlog": _unwritten(owner),
            "write_waiting": _write_waiting(owner),
            "round_robin": round_robin(cache),
            "binds_stuck": len(stuck), "oldest_stuck": _oldest_stuck(owner, stuck),
            "bind_stuck_after": owner.bind_stuck_after, "bind_deadline": owner.bind_deadline,
            "pending_reasons": owner.pending_reasons.counts,
            "pending_top": owner.pending_reasons.top(TOP_REASONS),
            "claims": owner.claims.status(),
            **owner.stats, **{k: v for part in owner.status_parts for k, v in part().items()}}


def watch_silence(reflectors, bound: float, now: float | None = None) -> dict:
    """Seconds since the API server last spoke to each kind's watch (`reflectors`: the
    decoder's views), and the `bound` past which a watch is restarted, for health's feed
    check (issue 22: a silent server otherwise looks healthy with lag 0)."""
    silent = {r.kind: r.silent_for(now) for r in reflectors}
    return {"watch_silent": {kind: round(s, 1) for kind, s in silent.items() if s is not None},
            "watch_silence": bound}


def _oldest_stuck(owner, stuck):
    """The stuck bind the overview links to: the longest waiting, or None."""
    if not stuck:
        return None
    uid, node = stuck[0]
    info = owner.cache.pod_info(uid)
    return {"uid": uid, "namespace": info.namespace, "name": info.name, "node": node,
            "assumed_at": owner.journal.assumptions.when(uid)}


def _unwritten(owner) -> int:
    """Changes the read model has yet to show: rows not yet built, batches not yet written."""
    queued = owner.writer.unwritten() if owner.writer is not None else 0
    return owner.rows.backlog() + queued


def _write_waiting(owner) -> float:
    """Seconds the database write in progress has taken: a hung database shows here while
    the owner goes on (its writer queues and merges, issue 22)."""
    return round(owner.writer.writing_for(), 1) if owner.writer is not None else 0.0


def round_robin(cache) -> dict:
    """NodeTree.next()'s position: the zone it asks next, each zone's next node."""
    position = cache.node_tree.position()
    return {"zone_index": position["zone_index"],
            "zones": [[zone_display(zone), index] for zone, index in position["zones"].items()]}
