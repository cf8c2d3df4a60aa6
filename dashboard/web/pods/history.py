"""A pod's life from the history: its timeline, and its path through the state machine.

Why here: the pod page draws the scheduler cache's state machine (Initial, Assumed,
Added, Expired, Deleted; the read model's Pending is the cache's Initial, and a
forgotten pod gets a box of its own, since an operator wants to see it) as an
SVG, with the pod's state lit and the edges it took marked. The geometry is
computed here because templates cannot do arithmetic. Everything comes from
`Transition` rows, which the owner writes in the same batches as the read model,
so the page tells the same story after any restart.
"""
import math
from dataclasses import dataclass

from dashboard.models import PodRecord, PodState, PrunedHistory, Transition

TIMELINE_LIMIT = 500     # newest transitions shown; a pod updated forever stays one page
BOX_W, BOX_H = 104, 38
WIDTH, HEIGHT = 660, 290

# diagram state -> (x, y of its box's centre, label, what else it stands for)
STATES = {
    "Initial": (70, 140, "Initial", "Pending"),
    "Assumed": (270, 140, "Assumed", ""),
    "Added": (500, 140, "Added", ""),
    "Forgotten": (170, 250, "Forgotten", "Initial again"),
    "Expired": (390, 250, "Expired", ""),
    "Deleted": (600, 250, "Deleted", ""),
}
# the scheduler cache's edges (and our forget): (from, to, label, bend in px; from == to is a loop)
EDGES = [
    ("Initial", "Assumed", "assume", 0),
    ("Assumed", "Assumed", "bind finished", 0),
    ("Assumed", "Added", "add (confirm)", 0),
    ("Initial", "Added", "add", 150),
    ("Assumed", "Forgotten", "forget", 0),
    ("Assumed", "Expired", "expire", 0),
    ("Expired", "Added", "add", 0),
    ("Added", "Added", "update", 0),
    ("Added", "Deleted", "remove", 0),
]
EXTRA_BEND = 40   # an edge outside the cache's (an odd history) still gets drawn, bent aside

KINDS = {
    "pod_assumed": "assumed", "pod_binding_finished": "binding finished",
    "pod_confirmed": "confirmed by the watch", "pod_added": "added",
    "pod_updated": "updated", "pod_forgotten": "forgotten", "pod_expired": "expired",
    "pod_removed": "removed",
}
CAUSES = {"watch": "watch event", "relist": "relist", "repair": "comparer's repair",
          "bind": "bind result",
          "reaper": "reaper", "operator": "operator", "owner": "owner",
          "extender": "kube-scheduler's extender", "bind deadline": "bind deadline"}
READ_MODEL_STATES = {PodState.PENDING: "Initial"}   # read model state -> diagram state


@dataclass(frozen=True)
class Step:
    """One transition as the timeline prints it."""
    seq: int
    at: object
    kind: str
    from_state: str
    to_state: str
    cause: str
    actor: str
    node: str
    detail: str      # why, where it was told: a failed bind's API server answer


@dataclass(frozen=True)
class DiagramState:
    name: str
    label: str
    alias: str
    x: int
    y: int
    current: bool
    visited: bool

    @property
    def left(self) -> int:
        return self.x - BOX_W // 2

    @property
    def top(self) -> int:
        return self.y - BOX_H // 2


@dataclass(frozen=True)
class DiagramEdge:
    source: str
    target: str
    label: str
    path: str           # SVG path data
    label_x: float
    label_y: float
    taken: int          # how many times the pod took it


@dataclass(frozen=True)
class Diagram:
    states: list[DiagramState]
    edges: list[DiagramEdge]
    current: str
    width: int = WIDTH
    height: int = HEIGHT
    box_width: int = BOX_W
    box_height: int = BOX_H


@dataclass(frozen=True)
class PodHistory:
    uid: str
    record: PodRecord | None     # None: the pod left the read model; its history remains
    steps: list[Step]            # oldest first
    truncated: bool              # older transitions than TIMELINE_LIMIT exist
    pruned: bool                 # older transitions were pruned (history_retention)
    diagram: Diagram
    namespace: str
    name: str
    state: str                   # the read model's state, else the diagram's last one

    @property
    def assumed(self) -> bool:
        return self.state == PodState.ASSUMED


def _step(t: Transition) -> Step:
    return Step(seq=t.seq, at=t.at, kind=KINDS.get(t.kind, t.kind.replace("_", " ")),
                from_state=t.from_state, to_state=_diagram_state(t),
                cause=CAUSES.get(t.cause, t.cause), actor=t.actor, node=t.node,
                detail=t.detail)


def shown_state(kind: str, to_state: str) -> str:
    """The state a pod transition leads to, in the words every page uses: the cache calls
    a forgotten pod Initial again, the pages call it Forgotten (its own box)."""
    return "Forgotten" if kind == "pod_forgotten" else (to_state or "Initial")


def _diagram_state(t: Transition) -> str:
    return shown_state(t.kind, t.to_state)


def walk(transitions) -> tuple[list[tuple[str, str]], str]:
    """The edges a pod took, in order, and the state it ended in, from its transitions.

    A transition from Initial continues from Forgotten when the pod was forgotten
    (forget sends a pod back to Initial), so a re-assumed pod's path stays connected."""
    current, taken = "Initial", []
    for t in transitions:
        source = t.from_state or current
        if current == "Forgotten" and source == "Initial":
            source = current
        target = _diagram_state(t)
        taken.append((source, target))
        current = target
    return taken, current


def diagram(taken: list[tuple[str, str]], current: str) -> Diagram:
    counts = {}
    for edge in taken:
        counts[edge] = counts.get(edge, 0) + 1
    visited = {state for edge in taken for state in edge} | {current}
    states = [DiagramState(name, label, alias, x, y, name == current, name in visited)
              for name, (x, y, label, alias) in STATES.items()]
    known = {(source, target) for source, target, _, _ in EDGES}
    extra = [(s, t, "", EXTRA_BEND) for s, t in counts if (s, t) not in known
             and s in STATES and t in STATES]
    edges = [DiagramEdge(s, t, label, *_geometry(s, t, bend), counts.get((s, t), 0))
             for s, t, label, bend in EDGES + extra]
    return Diagram(states, edges, current)


def _geometry(source: str, target: str, bend: float) -> tuple[str, float, float]:
    """SVG path data from box to box (a loop above the box when they are one) and
    where the label goes (a loop's beside it). A positive bend curves left of the way
    from source to target: above, for an edge drawn left to right."""
    sx, sy = STATES[source][:2]
    if source == target:
        top = sy - BOX_H / 2
        return (f"M {sx - 14} {top} C {sx - 30} {top - 36} {sx + 30} {top - 36} "
                f"{sx + 14} {top}", sx + 62, top - 18)
    tx, ty = STATES[target][:2]
    mx, my = (sx + tx) / 2, (sy + ty) / 2
    length = math.hypot(tx - sx, ty - sy)
    cx, cy = mx + bend * (ty - sy) / length, my - bend * (tx - sx) / length
    x1, y1 = _border(sx, sy, cx - sx, cy - sy, 0)
    x2, y2 = _border(tx, ty, cx - tx, cy - ty, 4)
    label_x, label_y = 0.25 * x1 + 0.5 * cx + 0.25 * x2, 0.25 * y1 + 0.5 * cy + 0.25 * y2
    return (f"M {x1:.0f} {y1:.0f} Q {cx:.0f} {cy:.0f} {x2:.0f} {y2:.0f}",
            round(label_x), round(label_y - 5))


def _border(x, y, dx, dy, gap) -> tuple[float, float]:
    """Where a line leaving the box centred at (x, y) towards (dx, dy) crosses its border,
    `gap` pixels further out (room for the arrow head)."""
    length = math.hypot(dx, dy) or 1.0
    ux, uy = dx / length, dy / length
    reach = min((BOX_W / 2) / abs(ux) if ux else math.inf,
                (BOX_H / 2) / abs(uy) if uy else math.inf)
    return x + ux * (reach + gap), y + uy * (reach + gap)


def pod_history(uid: str, until: int | None = None) -> PodHistory | None:
    """The pod's record (if still in the read model), newest TIMELINE_LIMIT transitions
    oldest first, and its diagram; None when neither a record nor a transition exists.
    `until`, a moment's sequence number: its story up to then, without the record (which
    is now's)."""
    if len(uid) > 253 or any(ord(c) < 32 for c in uid):
        return None     # no pod has it, and a NUL is an error to PostgreSQL, not a miss
    record = PodRecord.objects.filter(uid=uid).first() if until is None else None
    transitions = Transition.objects.filter(key=uid, kind__startswith="pod_")
    if until is not None:
        transitions = transitions.filter(seq__lte=until)
    newest = list(transitions.order_by("-seq")[:TIMELINE_LIMIT + 1])
    if record is None and not newest:
        return None
    truncated = len(newest) > TIMELINE_LIMIT
    transitions = newest[:TIMELINE_LIMIT][::-1]
    # A story that starts anywhere but from nothing lost its beginning to the pruning.
    pruned = not truncated and (not transitions or transitions[0].from_state
                                not in ("", "Initial")) and PrunedHistory.floor() > 0
    taken, last = walk(transitions)
    if record is not None:
        state, namespace, name = record.state, record.namespace, record.name
    else:
        state, namespace, name = last, newest[0].namespace, newest[0].name
    return PodHistory(uid, record, [_step(t) for t in transitions], truncated, pruned,
                      diagram(taken, READ_MODEL_STATES.get(state, state)),
                      namespace, name, state)
