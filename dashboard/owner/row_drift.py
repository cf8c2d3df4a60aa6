"""The read model's rows against the cache: rows the pages show and the owner does not
hold (or holds otherwise) are drift too.

Why: a row no relist touches (a stale owner's flush upserting pods already deleted,
issue 22; a batch the writer gave up on) leaves the pages wrong while the cache is right.

The writer lags the cache by up to a flush, so the rows are compared with what the owner
had *written* at the dump: the comparison thread first waits for the writer to write every
batch submitted before the dump (`wait_written`); a row written after the dump (its `seq`
above the dump's, or a node's `generation` above the dump's) and a key not yet built at
the dump (dirty) are the owner being ahead, not drift. What the owner changed between the
dump and the report is settled in its own thread (`settle`).

Each finding is [kind, key, row says, cache says]: kind "pod" (says [state, node]) or
"node" (says its generation); None where there is no row (`rows_missing`) or the owner
holds nothing (`rows_extra`); both differ in `rows_stale`.
"""
from dataclasses import dataclass

from dashboard.models import NodeRecord, PodRecord

WRITER_WAIT = 60.0       # seconds the comparison waits for the writer to catch up
_CHUNK = 10_000          # rows read a round trip


@dataclass
class RowsAtDump:
    """What the owner's rows held at the dump, taken in its thread (O(pending + dirty))."""
    seq: int              # the sequence number a row built then would carry
    outcomes: dict        # uid -> [state, node] of expired / forgotten pods
    pending: set          # uids of the pods the watch shows unbound
    dirty_pods: set       # not built yet: their rows are behind by design
    dirty_nodes: set
    submitted: int        # batches the writer had been handed


def expected_nodes(dump) -> dict:
    """name -> generation: the node rows the owner meant to write at the dump."""
    return {name: info.generation for name, info in dump.nodes.items()}


def expected_pods(dump, at: RowsAtDump) -> tuple:
    """The pod rows the owner meant to write at the dump, with ReadModelRows' precedence
    (the cache, then an outcome, then pending), as (uid -> node of the cached pods, uid ->
    [state, node] of the others). A cached pod's [state, node] is made as its row is read
    (`pod_state`): made for every cached pod at once, they were most of what the rows'
    comparison held at 600,000 pods."""
    cached = {pod_info.key: name for name, info in dump.nodes.items() for pod_info in info.pods}
    others = {uid: says for uid, says in at.outcomes.items() if uid not in cached}
    for uid in at.pending:
        if uid not in cached and uid not in others:
            others[uid] = ["Pending", ""]
    return cached, others


def pod_state(dump, uid, node) -> list:
    """A cached pod's row as the owner meant it: [state, node]."""
    return ["Assumed" if uid in dump.assumed_pods else "Added", node]


def read_rows():
    """(pod rows, node rows): the pods' (uid, state, node, seq) as an iterator that reads
    them _CHUNK at a time as it is consumed, the nodes' (name, generation) in a list. The
    caller closes this thread's connections once it has read them."""
    nodes = list(NodeRecord.objects.order_by().values_list("name", "generation")
                 .iterator(chunk_size=_CHUNK))
    pods = PodRecord.objects.order_by().values_list("uid", "state", "node", "seq") \
        .iterator(chunk_size=_CHUNK)
    return pods, nodes


def compare_rows(dump, at: RowsAtDump, pod_rows, node_rows) -> dict:
    """The rows' drift: {"rows_missing": [...], "rows_extra": [...], "rows_stale": [...]}.
    `pod_rows` is read once and none is kept: each row takes its pod out of what the owner
    meant to write, and what is left had no row."""
    cached, others = expected_pods(dump, at)
    drift = {"rows_missing": [], "rows_extra": [], "rows_stale": []}

    def check(kind, key, row, cache):
        if row is None:
            drift["rows_missing"].append([kind, key, None, cache])
        elif cache is None:
            drift["rows_extra"].append([kind, key, row, None])
        elif row != cache:
            drift["rows_stale"].append([kind, key, row, cache])

    for uid, state, node, seq in pod_rows:
        cached_node = cached.pop(uid, None)
        cache = (others.pop(uid, None) if cached_node is None
                 else pod_state(dump, uid, cached_node))
        if uid not in at.dirty_pods and seq <= at.seq:
            check("pod", uid, [state, node], cache)
    for uid, node in cached.items():
        if uid not in at.dirty_pods:
            check("pod", uid, None, pod_state(dump, uid, node))
    for uid, cache in others.items():
        if uid not in at.dirty_pods:
            check("pod", uid, None, cache)
    nodes, seen = expected_nodes(dump), set()
    for name, generation in node_rows:
        seen.add(name)
        cache = nodes.get(name)
        if name not in at.dirty_nodes and (cache is None or generation <= cache):
            check("node", name, generation, cache)
    for name, cache in nodes.items():
        if name not in seen and name not in at.dirty_nodes:
            check("node", name, None, cache)
    for found in drift.values():
        found.sort(key=lambda f: (f[0], f[1]))
    return drift


def settle(drift: dict, rows) -> dict:
    """Keep what is still wrong now (in the owner's thread): a key the owner changed since
    the dump (its row is rebuilt, or it means another row now) is the owner moving on."""
    def still(finding):
        kind, key, _, cache = finding
        if kind == "pod":
            return key not in rows.dirty_pods and rows.expected_pod(key) == cache
        return key not in rows.dirty_nodes and rows.expected_node(key) == cache
    return {kind: [f for f in found if still(f)] for kind, found in drift.items()}


def repair(drift: dict, rows):
    """Rewrite the rows found wrong: built again at the next flush (deleted where the owner
    holds nothing)."""
    for found in drift.values():
        for kind, key, _, _ in found:
            (rows.dirty_pods if kind == "pod" else rows.dirty_nodes).add(key)
