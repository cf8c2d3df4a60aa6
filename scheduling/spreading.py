"""Spreading across zones: a round robin over the NodeTree order.

The snapshot's node_info_list is the NodeTree's `list()`: zones interleaved
(first node of each zone, then the second of each, ...). Choosing, among the
feasible nodes, the first one found after the position chosen last time walks
that list like upstream's NodeTree.next(): consecutive pods go to consecutive
zones, and a zone that has no room is simply skipped. It is a placement rule,
not a score: no balancing of requested fractions and no topology spread
constraints; it keeps a decision cheap (one pass over the filtered nodes) and
deterministic for a given cache state.
"""


class ZoneRoundRobin:
    def __init__(self):
        self.last_index = -1      # position in NodeTree order chosen last
        self.last_name = None

    def start(self, records) -> int:
        """The NodeTree position to start from: just after the last chosen node."""
        if self.last_name is not None:
            record = records.by_name.get(self.last_name)
            if record is not None:
                self.last_index = record.index
        count = len(records.ordered)
        return (self.last_index + 1) % count if count else 0

    def chosen(self, record):
        self.last_index = record.index
        self.last_name = record.name
