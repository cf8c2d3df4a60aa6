"""What the pages show of a cache, as plain values the templates print.

Why: templates can neither do arithmetic nor call methods with arguments;
this is the one place that reads a cache for display (counts, resource
bars, zone groups), for whole pages and their fragments alike.
"""
from dataclasses import dataclass

from schedcache import Cache, Snapshot

GIB = 1024**3


@dataclass(frozen=True)
class Usage:
    """Requested against allocatable, for one resource."""
    requested: float
    allocatable: float
    unit: str

    @property
    def percent(self) -> int:
        return round(100 * self.requested / self.allocatable) if self.allocatable else 0

    @property
    def text(self) -> str:
        return f"{self.requested:.1f} / {self.allocatable:.1f} {self.unit}"


def cpu(infos) -> Usage:
    """CPU requested against allocatable, summed over `infos` (NodeInfos)."""
    return Usage(sum(i.requested.milli_cpu for i in infos) / 1000,
                 sum(i.allocatable.milli_cpu for i in infos) / 1000, "cores")


def memory(infos) -> Usage:
    """Memory requested against allocatable, summed over `infos` (NodeInfos)."""
    return Usage(sum(i.requested.memory for i in infos) / GIB,
                 sum(i.allocatable.memory for i in infos) / GIB, "GiB")


def zone_label(zone_key: str | None) -> str:
    """A NodeTree zone key ("region:\\x00:zone") as people write it: "region/zone"."""
    if zone_key is None:
        return "(not in the tree)"
    return zone_key.replace(":\x00:", "/") or "(no zone)"


@dataclass(frozen=True)
class Overview:
    nodes: int
    pods: int
    assumed: int
    cache_generation: int
    snapshot_generation: int
    cpu: Usage
    memory: Usage


@dataclass(frozen=True)
class NodeRow:
    name: str
    zone: str
    cpu: Usage
    memory: Usage
    pods: int
    assumed: int
    generation: int


@dataclass(frozen=True)
class ZoneGroup:
    label: str
    nodes: list[tuple[int, str]]  # (1-based position in node_tree.list(), node name)


def overview(cache: Cache, snapshot: Snapshot) -> Overview:
    infos = list(cache.dump().nodes.values())
    return Overview(
        nodes=cache.node_count(),
        pods=cache.pod_count(),
        assumed=cache.assumed_count(),
        cache_generation=cache.generation,
        snapshot_generation=snapshot.generation,
        cpu=cpu(infos),
        memory=memory(infos),
    )


def nodes(cache: Cache) -> list[NodeRow]:
    """One row per NodeInfo, by name."""
    dump = cache.dump()
    return [
        NodeRow(
            name=name,
            zone=zone_label(cache.node_tree.zone_of(name)),
            cpu=cpu([info]),
            memory=memory([info]),
            pods=len(info.pods),
            assumed=sum(_uid(p.pod) in dump.assumed_pods for p in info.pods),
            generation=info.generation,
        )
        for name, info in sorted(dump.nodes.items())
    ]


def _uid(pod) -> str:
    return pod["metadata"]["uid"]


def zones(cache: Cache) -> list[ZoneGroup]:
    """The NodeTree's list() order, grouped by zone (zones in first-seen order)."""
    tree = cache.node_tree
    groups = {zone: ZoneGroup(zone_label(zone), []) for zone in tree.zones}
    for position, name in enumerate(tree.list(), start=1):
        groups[tree.zone_of(name)].nodes.append((position, name))
    return list(groups.values())
