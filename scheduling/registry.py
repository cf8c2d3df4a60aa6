"""Pick the algorithm by a setting: a dotted path to a SchedulerAlgorithm class.

    load_algorithm("scheduling.algorithm.DefaultAlgorithm", cache=cache)
    load_algorithm("mypkg.gang:GangAlgorithm", cache=cache, slots=4)

The class is called with the keyword arguments given. "module.Class" and
"module:Class" are both accepted; an empty path means the default.
"""
import importlib

from .algorithm import REQUIRED_METHODS

DEFAULT_ALGORITHM = "scheduling.algorithm.DefaultAlgorithm"


class AlgorithmLoadError(ImportError):
    """The configured algorithm path is malformed, missing or not a SchedulerAlgorithm."""


def resolve(dotted_path: str):
    """The class a dotted path names, checked to implement SchedulerAlgorithm."""
    path = (dotted_path or DEFAULT_ALGORITHM).strip()
    if ":" in path:
        module_name, _, attribute = path.partition(":")
    else:
        module_name, _, attribute = path.rpartition(".")
    if not module_name or not attribute:
        raise AlgorithmLoadError(
            f"scheduler algorithm {dotted_path!r} is not a dotted path like "
            f"'package.module.ClassName'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise AlgorithmLoadError(
            f"scheduler algorithm {dotted_path!r}: cannot import module {module_name!r} ({exc})"
        ) from exc
    target = module
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise AlgorithmLoadError(
                f"scheduler algorithm {dotted_path!r}: module {module_name!r} has no "
                f"attribute {attribute!r}") from None
    if not isinstance(target, type):
        raise AlgorithmLoadError(
            f"scheduler algorithm {dotted_path!r} names a {type(target).__name__}, not a class")
    missing = [m for m in REQUIRED_METHODS if not callable(getattr(target, m, None))]
    if missing:
        raise AlgorithmLoadError(
            f"scheduler algorithm {dotted_path!r} is not a SchedulerAlgorithm: "
            f"it lacks {', '.join(missing)}")
    return target


def load_algorithm(dotted_path: str = DEFAULT_ALGORITHM, **kwargs):
    """An instance of the class `dotted_path` names, built with `kwargs`."""
    return resolve(dotted_path)(**kwargs)
