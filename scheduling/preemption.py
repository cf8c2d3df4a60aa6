"""Priority preemption: make room for a pod that fits nowhere by evicting the fewest
lower-priority pods.

On each candidate node (one refused only for resources or host ports, the
refusals eviction can cure) the pods of strictly lower priority are removed,
lowest priority first, until the pod fits; then the removed pods are put back,
highest priority first, as long as the pod still fits (the reprieve). What
stays removed are the node's victims. A pod of equal or higher priority is
never a victim.

The node chosen has the fewest victims, then the lowest highest-victim
priority, then comes first in NodeTree order. (Upstream compares the highest
victim priority before the count; here the fewest victims come first, so a
preemption evicts as few pods as it can.) A pod whose preemptionPolicy is Never preempts nothing. Pod
disruption budgets, graceful termination and nominated pods are not modelled.
"""
from bisect import bisect_left

from . import predicates


class _Room:
    """A node's free resources and host ports while victims are taken off and put back."""

    __slots__ = ("pod", "free_pods", "free_cpu", "free_memory", "free_ephemeral",
                 "free_scalars", "ports")

    def __init__(self, pod, record):
        self.pod = pod
        self.free_pods = record.free_pods
        self.free_cpu = record.free_cpu
        self.free_memory = record.free_memory
        self.free_ephemeral = record.free_ephemeral
        self.free_scalars = dict(record.free_scalars)
        self.ports = record.info.used_ports if pod.host_ports else None

    def _shift(self, victim, sign):
        requested = victim.requested
        self.free_pods += sign
        self.free_cpu += sign * requested.milli_cpu
        self.free_memory += sign * requested.memory
        self.free_ephemeral += sign * requested.ephemeral_storage
        for name, amount in requested.scalar_resources.items():
            self.free_scalars[name] = self.free_scalars.get(name, 0) + sign * amount
        if self.ports is not None:
            change = self.ports.remove if sign > 0 else self.ports.add
            for ip, protocol, port in victim.host_ports:
                change(ip, protocol, port)

    def take_off(self, victim):
        self._shift(victim, 1)

    def put_back(self, victim):
        self._shift(victim, -1)

    def fits(self) -> bool:
        if predicates.fit_reasons(self.pod, self.free_pods, self.free_cpu, self.free_memory,
                                  self.free_ephemeral, self.free_scalars):
            return False
        return not self.port_conflict()

    def port_conflict(self) -> bool:
        if self.ports is None:
            return False
        check = self.ports.check_conflict
        return any(check(ip, protocol, port) for ip, protocol, port in self.pod.host_ports)

    def refusals(self) -> list:
        """kube-scheduler's reasons the node still refuses the pod (ports first, as its
        NodePorts filter runs before NodeResourcesFit)."""
        if self.port_conflict():
            return [predicates.PORTS]
        return predicates.fit_reasons(self.pod, self.free_pods, self.free_cpu, self.free_memory,
                                      self.free_ephemeral, self.free_scalars)


def _priority(pod_info):
    return pod_info.priority


def _needed(prefix, amount, free):
    """How many of the lowest-priority pods must go for `amount` to fit in `free`."""
    if not amount or amount <= free:
        return 0
    return bisect_left(prefix, amount - free)


def select_victims(pod, record):
    """The victims that make `pod` fit on the node of `record`, or None when none can."""
    count = record.count_below(pod.priority)
    if not count:
        return None
    pods, cpu, memory, ephemeral = record.removal_sums()
    # The running sums give at once how many pods, lowest priority first, must go for
    # pods/cpu/memory/ephemeral storage; extended resources and ports continue one by one.
    first = max(1 - record.free_pods if record.free_pods < 1 else 0,
                _needed(cpu, pod.milli_cpu, record.free_cpu),
                _needed(memory, pod.memory, record.free_memory),
                _needed(ephemeral, pod.ephemeral_storage, record.free_ephemeral))
    if first > count:
        return None
    room = _Room(pod, record)
    removed = list(pods[:first])
    for candidate in removed:
        room.take_off(candidate)
    if not room.fits():
        for candidate in pods[first:count]:
            room.take_off(candidate)
            removed.append(candidate)
            if room.fits():
                break
        else:
            return None
    victims = []
    for candidate in sorted(removed, key=_priority, reverse=True):
        room.put_back(candidate)
        if not room.fits():
            room.take_off(candidate)
            victims.append(candidate)
    return tuple(victims)


def refusals_without_victims(pod, record) -> list:
    """Why the node still refuses `pod` once every pod of lower priority is gone (the
    dry run's verdict on a node where no set of victims helps); [] when it would fit."""
    count = record.count_below(pod.priority)
    pods, cpu, memory, ephemeral = record.removal_sums()
    if not pod.scalars and not pod.host_ports:
        # The running sums give what is free once they are gone, without a room.
        return predicates.fit_reasons(pod, record.free_pods + count,
                                      record.free_cpu + cpu[count],
                                      record.free_memory + memory[count],
                                      record.free_ephemeral + ephemeral[count], {})
    room = _Room(pod, record)
    for candidate in pods[:count]:
        room.take_off(candidate)
    return room.refusals()


def choose(pod, candidates):
    """(record, victims) of the best candidate node, or None.

    `candidates` are NodeRecords refused only for resources or ports.
    """
    if not pod.may_preempt:
        return None
    best, best_key = None, None
    for record in candidates:
        victims = select_victims(pod, record)
        if victims is None:
            continue
        key = (len(victims), max((v.priority for v in victims), default=-(2 ** 63)), record.index)
        if best_key is None or key < best_key:
            best, best_key = (record, victims), key
    return best
