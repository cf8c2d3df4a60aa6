"""The two refusals of the cache: both leave the cache exactly as it was."""


class CacheError(Exception):
    """An operation the pod state machine (or node bookkeeping) does not allow."""


class CacheCorruptedError(CacheError):
    """The event stream contradicts the cache in a way upstream treats as fatal.

    Upstream kube-scheduler exits on this (a pod updated or removed on another
    node than the one it was added to). Here the cache stays usable and the
    caller decides.
    """


class SnapshotRepairedError(CacheError):
    """A snapshot was found inconsistent with the cache and has been rebuilt.

    Raised after the repair, so the snapshot is usable; it surfaces the problem
    the way upstream's UpdateSnapshot returns an error after recovering.
    """
