"""A batch of the owner's rows for the database: what one flush hands the writer.

Plain dicts and lists, no Django: the owner's parts gather into it, and only the
writer thread (projection.py) turns it into SQL.
"""
from dataclasses import dataclass, field


@dataclass
class Batch:
    pods: dict = field(default_factory=dict)        # uid -> row dict, or None to delete
    nodes: dict = field(default_factory=dict)       # name -> row dict, or None to delete
    transitions: list = field(default_factory=list)
    samples: list = field(default_factory=list)
    comparer_runs: list = field(default_factory=list)
    audits: list = field(default_factory=list)      # AuditAction rows of the owner's own acts
    checkpoint: object = None  # a checkpoints.Capture of the cache, encoded by the writer
    prune_epoch: int = None  # delete rows written by any other owner (after a full sync)
    term: int = None         # the writer's lease term: written only while it is current

    def __bool__(self):
        return bool(self.pods or self.nodes or self.transitions or self.samples
                    or self.comparer_runs or self.audits or self.prune_epoch is not None
                    or self.checkpoint is not None)

    def rows(self) -> int:
        return len(self.pods) + len(self.nodes) + len(self.transitions)

    def absorb(self, later: "Batch"):
        """Take in the batch that came after this one: its rows win, its lists follow."""
        self.pods.update(later.pods)
        self.nodes.update(later.nodes)
        self.transitions.extend(later.transitions)
        self.samples.extend(later.samples)
        self.comparer_runs.extend(later.comparer_runs)
        self.audits.extend(later.audits)
        if later.checkpoint is not None:
            self.checkpoint = later.checkpoint
        if later.prune_epoch is not None:
            self.prune_epoch = later.prune_epoch
        if later.term is not None:
            self.term = later.term
