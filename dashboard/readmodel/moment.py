"""The cluster as it was at a kept moment: the latest checkpoint at or before it, plus the
transitions after the checkpoint up to it.

Why this way: the history alone would replay millions of transitions; checkpoints alone
would know only every few minutes. A moment is named by a sequence number or a time (the
latest transition at or before it). A moment the history no longer covers (before the
oldest checkpoint, or before what pruning kept) is `Gone` (the API's 410), never a
reconstruction from half the history; `at` that names no moment is `BadMoment` (400).
"""
import re
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime, timedelta
from datetime import timezone as dt_timezone
from threading import Lock

from django.db import connections
from django.db.models import Count, Max, TextField
from django.db.models.functions import Cast
from django.utils import timezone

from dashboard.models import Checkpoint, PrunedHistory, Transition
from dashboard.readmodel.cluster_state import (
    ALLOCATABLE,
    BOUND,
    GENERATION,
    HAS_NODE,
    IMAGES,
    NAME,
    NAMESPACE,
    NODE,
    NOTHING,
    PRIORITY,
    REQUESTED,
    STATE,
    SUM_BY_STATE,
    SUM_FINISHED,
    SUM_REQUESTED,
    TAINTS,
    UNSCHEDULABLE,
    ZONE,
    ClusterState,
    add_entry,
    collector_paused,
    replay_value,
    resource_dict,
    zone_display,
    zone_pair,
)
from dashboard.readmodel.read_model import RECENT

_SEQ = re.compile(r"[0-9]{1,18}")
REPLAY_CHUNK = 5000
KEPT_STATES = 2     # reconstructions kept per process: a page and its partials read one
KEPT_CHECKPOINTS = 1   # decoded checkpoints kept: about 90 MB at 150,000 pods


class BadMoment(ValueError):
    """`at` names no moment: the API's 400."""


class Gone(LookupError):
    """The moment is older than what is kept: the API's 410."""


@dataclass(frozen=True)
class MomentRef:
    seq: int
    at: datetime          # the time of the latest transition at or before `seq`


def utc_time(text: str) -> datetime:
    """An ISO 8601 time ("2026-11-26T04:30:00Z"), UTC when it names no zone; ValueError
    when it is none. The one reading of a time a person typed (`at`, the Events page's
    window)."""
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=dt_timezone.utc)


def parse_at(text: str) -> MomentRef:
    """A sequence number ("123456") or an ISO 8601 time ("2026-11-26T04:30:00Z"; without an
    offset, UTC) as the moment it names; BadMoment or Gone."""
    text = (text or "").strip()
    if not text:
        raise BadMoment("at: give a sequence number or an ISO 8601 time "
                        "(e.g. 2026-11-26T04:30:00Z)")
    if _SEQ.fullmatch(text):
        return _by_seq(int(text))
    try:
        moment = utc_time(text)
    except ValueError:
        raise BadMoment(f"at: {text[:60]!r} is neither a sequence number nor an ISO 8601 "
                        f"time (e.g. 2026-11-26T04:30:00Z)") from None
    if moment > timezone.now() + timedelta(seconds=1):
        raise BadMoment(f"at: {moment.isoformat()} is in the future")
    row = (Transition.objects.filter(at__lte=moment).order_by("-at", "-seq")
           .values_list("seq", "at").first())
    if row is None:
        raise Gone(f"{moment.isoformat()} is before the oldest moment kept{_oldest_text()}")
    return MomentRef(row[0], moment)


def _latest_seq() -> int:
    """The latest moment there is: the latest event's (or checkpoint's) sequence number."""
    return max(Transition.objects.aggregate(top=Max("seq"))["top"] or 0,
               Checkpoint.objects.aggregate(top=Max("seq"))["top"] or 0)


def _by_seq(seq: int) -> MomentRef:
    top = _latest_seq()
    if seq > top:
        raise BadMoment(f"at: sequence number {seq} is after the latest event ({top})")
    row = (Transition.objects.filter(seq__lte=seq).order_by("-seq")
           .values_list("at", flat=True).first())
    if row is None:
        checkpoint = Checkpoint.objects.filter(seq__lte=seq).order_by("-seq").first()
        if checkpoint is None:
            raise Gone(f"sequence number {seq} is before the oldest moment kept{_oldest_text()}")
        row = checkpoint.at
    return MomentRef(seq, row)


def oldest_kept() -> Checkpoint | None:
    """The oldest checkpoint whose history after it is whole: the oldest moment readable."""
    floor = PrunedHistory.floor()
    return (Checkpoint.objects.filter(seq__gte=floor - 1).order_by("seq")
            .only("seq", "at").first())


@dataclass(frozen=True)
class KeptRange:
    first: int      # the oldest moment readable: a checkpoint's sequence number
    last: int       # the latest event's


def kept_range() -> KeptRange | None:
    """The moments that can be read, oldest to latest (the header's scrubber spans them);
    None before the first checkpoint. One query of index probes, as oldest_kept and
    _latest_seq ask them: every page's header prints it."""
    quoted = connections[Checkpoint.objects.db].ops.quote_name
    checkpoints, transitions, pruned = (quoted(model._meta.db_table)
                                        for model in (Checkpoint, Transition, PrunedHistory))
    with connections[Checkpoint.objects.db].cursor() as cursor:
        cursor.execute(
            f"SELECT (SELECT MIN(seq) FROM {checkpoints} WHERE seq >= COALESCE("
            f"(SELECT below_seq FROM {pruned} WHERE id = 1), 0) - 1),"
            f" (SELECT MAX(seq) FROM {transitions}), (SELECT MAX(seq) FROM {checkpoints})")
        oldest, latest_transition, latest_checkpoint = cursor.fetchone()
    if oldest is None:
        return None
    return KeptRange(oldest, max(latest_transition or 0, latest_checkpoint or 0))


def _oldest_text() -> str:
    oldest = oldest_kept()
    if oldest is None:
        return " (no checkpoint yet: the owner writes one every few minutes)"
    return f" (seq {oldest.seq}, {oldest.at.isoformat()})"


# --- reconstruction ---------------------------------------------------------------------------
_kept: OrderedDict = OrderedDict()          # (checkpoint pk, seq) -> ClusterState
_decoded: OrderedDict = OrderedDict()       # checkpoint pk -> its ClusterState, never replayed on
_kept_lock = Lock()


def _remember(kept: OrderedDict, key, value, size: int):
    with _kept_lock:
        kept[key] = value
        kept.move_to_end(key)
        while len(kept) > size:
            kept.popitem(last=False)


def _recalled(kept: OrderedDict, key):
    with _kept_lock:
        value = kept.get(key)
        if value is not None:
            kept.move_to_end(key)
        return value


def state_at(seq: int) -> ClusterState:
    """The cache at `seq` (Gone when it is not kept). The result is shared: do not change it.

    Whether the moment is kept is asked every time (two indexed reads); only its
    reconstruction is reused, keyed by the checkpoint it started from as well."""
    checkpoint = (Checkpoint.objects.filter(seq__lte=seq).order_by("-seq")
                  .values_list("pk", "seq").first())
    if checkpoint is None or checkpoint[1] + 1 < PrunedHistory.floor():
        raise Gone(f"sequence number {seq} is before the oldest moment kept{_oldest_text()}")
    key = (checkpoint[0], seq)
    state = _recalled(_kept, key)
    if state is None:
        with collector_paused():
            state = _reconstructed(checkpoint[0], seq)
        _remember(_kept, key, state, KEPT_STATES)
    return state


def forget_reconstructions(checkpoints: bool = True) -> None:
    """Drop the reconstructions this process keeps, and the decoded checkpoints unless
    told not to (a test's database starts afresh; the bench times each part)."""
    with _kept_lock:
        _kept.clear()
        if checkpoints:
            _decoded.clear()


def _reconstructed(checkpoint_pk: int, seq: int) -> ClusterState:
    start = _recalled(_decoded, checkpoint_pk)
    if start is None:
        checkpoint = Checkpoint.objects.only("state").get(pk=checkpoint_pk)
        start = ClusterState.decoded(bytes(checkpoint.state))
        _remember(_decoded, checkpoint_pk, start, KEPT_CHECKPOINTS)
    state = start.copy()
    # `replay` as text, parsed by orjson: the JSON field's own decoding (the standard
    # library's, row by row) costs several times the rest of the replay.
    rows = (Transition.objects.filter(seq__gt=start.seq, seq__lte=seq).order_by("seq")
            .annotate(replay_text=Cast("replay", TextField()))
            .values_list("seq", "kind", "key", "namespace", "name", "node", "generation",
                         "replay_text"))
    # A period's transitions repeat a few hundred request sets: each text is parsed once,
    # and the pods replayed from it share its entries (a replay never changes one).
    parsed = {}
    for row_seq, kind, key, namespace, name, node, generation, replay in rows.iterator(
            chunk_size=REPLAY_CHUNK):
        found = parsed.get(replay)
        if found is None and replay is not None:
            found = parsed[replay] = replay_value(kind, replay)
        state.replay(row_seq, kind, key, namespace, name, node, generation, found)
    state.seq = seq
    state.drop_empty_ghosts()
    return state


# --- what the pages and the API read of a moment ---------------------------------------------
@dataclass(frozen=True)
class Moment:
    ref: MomentRef
    state: ClusterState

    @property
    def seq(self) -> int:
        return self.ref.seq

    @property
    def at(self) -> datetime:
        return self.ref.at

    def counts(self) -> dict:
        """Cached pods by state (Assumed, of them binding finished, Added), and the pods
        expired and forgotten in the RECENT minutes up to the moment (from the history)."""
        assumed = finished = added = 0
        for sums in self.state.sums.values():
            by_state = sums[SUM_BY_STATE]
            assumed += by_state.get("Assumed", 0)
            added += by_state.get("Added", 0)
            finished += sums[SUM_FINISHED]
        outcomes = dict(Transition.objects.order_by()
                        .filter(seq__lte=self.seq, at__gte=self.at - RECENT, at__lte=self.at,
                                kind__in=["pod_expired", "pod_forgotten"])
                        .values_list("kind").annotate(n=Count("*")))
        return {"assumed": assumed, "binding_finished": finished, "added": added,
                "expired_recently": outcomes.get("pod_expired", 0),
                "forgotten_recently": outcomes.get("pod_forgotten", 0),
                "recent_minutes": int(RECENT.total_seconds() // 60),
                "nodes": len(self.state.nodes),
                "missing_nodes": sum(not n[HAS_NODE] for n in self.state.nodes.values())}

    def totals(self) -> dict:
        """Requested and allocatable CPU (millicores) and memory (bytes) over all nodes."""
        requested, allocatable = [0, 0, 0, 0, {}], [0, 0, 0, 0, {}]
        for sums in self.state.sums.values():
            add_entry(requested, sums[SUM_REQUESTED])
        for node in self.state.nodes.values():
            add_entry(allocatable, node[ALLOCATABLE] or NOTHING)
        return {"cpu_requested": requested[0], "cpu_allocatable": allocatable[0],
                "memory_requested": requested[1], "memory_allocatable": allocatable[1]}

    def tree_index(self) -> dict:
        return {name: i for i, name in enumerate(self.state.tree.list())}

    def nodes(self, names=None) -> list[dict]:
        """Each NodeInfo (or those named) as the read model's node rows hold it, by name."""
        index = self.tree_index()
        return [self._node(name, index)
                for name in sorted(self.state.nodes if names is None else names)
                if name in self.state.nodes]

    def node(self, name: str) -> dict | None:
        found = self.nodes([name])
        return found[0] if found else None

    def _node(self, name, index) -> dict:
        node = self.state.nodes[name]
        requested, non_zero, pods, by_state, _ = self.state.sums.get(name) or (
            NOTHING, NOTHING, 0, {}, 0)
        return {"name": name, "zone": zone_display(node[ZONE]) if node[HAS_NODE] else "",
                "tree_index": index.get(name, -1), "has_node": node[HAS_NODE],
                "generation": node[GENERATION], "pods": pods, "images": node[IMAGES],
                "requested": resource_dict(requested),
                "non_zero_requested": resource_dict(non_zero),
                "allocatable": resource_dict(node[ALLOCATABLE] or NOTHING),
                "unschedulable": node[UNSCHEDULABLE], "taints": node[TAINTS],
                "pods_by_state": dict(by_state)}

    def pod_summaries(self, node: str = "", *, namespace: str = "", zone: str = "",
                      state: str = "", contains: str = "") -> list[tuple]:
        """The cached pods on `node`, in `namespace`, `zone` or `state`, whose name contains
        `contains` (all, by default), unsorted, each a tuple in POD_SUMMARY's order (its
        extended resources shared: do not change them). Tuples, filtered before any is
        built: the pods list sorts 150,000 of them and makes rows of one page only."""
        zone_of = {name: zone_display(n[ZONE]) for name, n in self.state.nodes.items()}
        with collector_paused():
            return [(pod[NAMESPACE], pod[NAME], uid, pod[NODE], zone_of.get(pod[NODE], ""),
                     pod[STATE], pod[PRIORITY], pod[REQUESTED][0], pod[REQUESTED][1],
                     bool(pod[BOUND]), pod[REQUESTED][4])
                    for uid, pod in self.state.pods.items()
                    if (not node or pod[NODE] == node) and (not state or pod[STATE] == state)
                    and (not namespace or pod[NAMESPACE] == namespace)
                    and (not zone or zone_of.get(pod[NODE], "") == zone)
                    and contains in pod[NAME]]

    def pods(self, node: str = "", **filters) -> list[dict]:
        """Cached pods as pod_summaries chooses them, by namespace and name (a summary's
        first fields), as dicts."""
        return [pod_dict(summary) for summary in sorted(self.pod_summaries(node, **filters))]

    def pod(self, uid: str) -> dict | None:
        """The cached pod `uid`, None when the cache did not hold it then."""
        pod = self.state.pods.get(uid)
        if pod is None:
            return None
        node = self.state.nodes.get(pod[NODE])
        return pod_dict((pod[NAMESPACE], pod[NAME], uid, pod[NODE],
                         zone_display(node[ZONE]) if node else "", pod[STATE], pod[PRIORITY],
                         pod[REQUESTED][0], pod[REQUESTED][1], bool(pod[BOUND]),
                         pod[REQUESTED][4]))

    def namespaces(self) -> list[str]:
        return sorted({pod[NAMESPACE] for pod in self.state.pods.values()})

    def zones(self) -> list[dict]:
        """Zones in NodeTree order, each with its nodes in list() order."""
        tree = self.state.tree
        index = self.tree_index()
        return [{"zone": zone_display(zone_pair(zone)),
                 "nodes": sorted(tree.nodes_in(zone), key=index.__getitem__)}
                for zone in tree.zones]


POD_SUMMARY = ("namespace", "name", "uid", "node", "zone", "state", "priority", "milli_cpu",
               "memory", "binding_finished", "scalar_resources")


def pod_dict(summary: tuple) -> dict:
    """A pod summary as the pages and the API read a pod (its own extended resources)."""
    pod = dict(zip(POD_SUMMARY, summary))
    pod["scalar_resources"] = dict(pod["scalar_resources"])
    return pod


def moment(at: str) -> Moment:
    """The moment `at` names, reconstructed (BadMoment, Gone)."""
    ref = parse_at(at)
    return Moment(ref, state_at(ref.seq))
