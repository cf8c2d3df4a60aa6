"""schedcache: the Kubernetes scheduler cache as a plain Python library.

Standard library only; no I/O; the clock is read only where a caller did not
pass `now`. The public API is fixed by shared/contract/schedcache.md.
"""
from .cache import Cache, Dump
from .comparer import CompareReport, compare, compare_dump
from .errors import CacheCorruptedError, CacheError, SnapshotRepairedError
from .events import CacheEvent
from .hostports import HostPortInfo
from .images import ImageStateSummary
from .nodeinfo import NodeInfo
from .nodetree import NodeTree
from .podinfo import PodInfo
from .quantity import parse_quantity
from .resource import Resource
from .selector import parse_selector
from .snapshot import Snapshot

__all__ = ["Cache", "CacheCorruptedError", "CacheError", "CacheEvent", "CompareReport", "Dump",
           "HostPortInfo", "ImageStateSummary", "NodeInfo", "NodeTree", "PodInfo", "Resource",
           "Snapshot", "SnapshotRepairedError", "compare", "compare_dump", "parse_quantity",
           "parse_selector"]
