"""scheduling: the SchedulerAlgorithm interface and a default algorithm, fed from schedcache.

Standard library and schedcache only; no Django, no I/O.
"""
from .algorithm import DefaultAlgorithm, SchedulerAlgorithm
from .registry import DEFAULT_ALGORITHM, AlgorithmLoadError, load_algorithm
from .result import BindInfo, PreemptInfo, ScheduleResult, WaitInfo

__all__ = ["AlgorithmLoadError", "BindInfo", "DEFAULT_ALGORITHM", "DefaultAlgorithm",
           "PreemptInfo", "ScheduleResult", "SchedulerAlgorithm", "WaitInfo", "load_algorithm"]
