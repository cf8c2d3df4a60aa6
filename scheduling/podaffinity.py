"""Required inter-pod affinity and anti-affinity (kube-scheduler's InterPodAffinity filter).

Three checks, in upstream's order, each with its own reason:

1. the pod's required podAffinity: every term's topology domain on the node must
   hold a pod matching the term (pods are counted only when they match every
   term); a pod that matches its own terms while no pod anywhere does may go
   anywhere the topology keys exist (the first of a self-affine group).
   Unresolvable: evicting pods never creates a match.
2. the pod's required podAntiAffinity: no term's domain on the node may hold a
   matching pod.
3. the placed pods' required anti-affinity: no placed pod whose term matches
   this pod may share that term's domain with the node.

A term's namespaces are its `namespaces`, or the owning pod's namespace when it
names none and has no namespaceSelector; an empty namespaceSelector means every
namespace. A namespaceSelector with labels would need the Namespace objects,
which the cache does not hold: only the listed namespaces count then.
"""
from .nodeaffinity import compile_expression

AFFINITY = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"


def _never(labels):
    return False


def _always(labels):
    return True


def compile_label_selector(selector):
    """A metav1.LabelSelector -> labels -> bool: null selects nothing, {} everything."""
    if selector is None:
        return _never
    wanted = tuple((selector.get("matchLabels") or {}).items())
    expressions = [compile_expression(e) for e in (selector.get("matchExpressions") or ())]
    if not wanted and not expressions:
        return _always

    def match(labels):
        for key, value in wanted:
            if labels.get(key) != value:
                return False
        return all(expression(labels) for expression in expressions)
    return match


class Term:
    """One required PodAffinityTerm, compiled for the pod that carries it."""

    __slots__ = ("topology_key", "namespaces", "selects")

    def __init__(self, term, owner_namespace):
        self.topology_key = term.get("topologyKey") or ""
        names = frozenset(term.get("namespaces") or ())
        namespace_selector = term.get("namespaceSelector")
        if namespace_selector is not None and not namespace_selector.get("matchLabels") \
                and not namespace_selector.get("matchExpressions"):
            self.namespaces = None            # every namespace
        elif not names and namespace_selector is None:
            self.namespaces = frozenset((owner_namespace,))
        else:
            self.namespaces = names
        self.selects = compile_label_selector(term.get("labelSelector"))

    def matches(self, namespace, labels) -> bool:
        return ((self.namespaces is None or namespace in self.namespaces)
                and self.selects(labels or {}))


def required_terms(spec, kind, namespace) -> tuple:
    """The compiled required terms of `kind` ("podAffinity" or "podAntiAffinity")."""
    affinity = ((spec.get("affinity") or {}).get(kind)) or {}
    return tuple(Term(t, namespace) for t in
                 (affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or ()))


class InterPodAffinity:
    """The filter for one pending pod over one set of NodeRecords (counted once here).

    `anti_affinity_nodes`: the NodeInfos holding pods with required anti-affinity (the
    snapshot's have_pods_with_required_anti_affinity_node_info_list)."""

    def __init__(self, pod, records, anti_affinity_nodes):
        metadata, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        namespace = metadata.get("namespace") or ""
        self.labels = metadata.get("labels") or {}
        self.affinity = required_terms(spec, "podAffinity", namespace)
        self.anti_affinity = required_terms(spec, "podAntiAffinity", namespace)
        self.affinity_counts = {}        # (topology key, value) -> pods matching every term
        self.anti_affinity_counts = {}   # (topology key, value) -> pods matching a term
        self.existing_counts = {}        # (topology key, value) -> placed pods refusing this one
        if self.affinity or self.anti_affinity:
            self._count_pods(records)
        self._count_existing(records, anti_affinity_nodes, namespace)
        self.self_affine = all(t.matches(namespace, self.labels) for t in self.affinity)

    @property
    def active(self) -> bool:
        return bool(self.affinity or self.anti_affinity or self.existing_counts)

    def _count_pods(self, records):
        affinity, anti_affinity = self.affinity, self.anti_affinity
        for record in records.ordered:
            labels = record.labels
            for info in record.info.pods:
                if affinity and all(t.matches(info.namespace, info.labels) for t in affinity):
                    for term in affinity:
                        _count(self.affinity_counts, term.topology_key, labels)
                for term in anti_affinity:
                    if term.matches(info.namespace, info.labels):
                        _count(self.anti_affinity_counts, term.topology_key, labels)

    def _count_existing(self, records, anti_affinity_nodes, namespace):
        by_name = records.by_name
        for node_info in anti_affinity_nodes:
            record = by_name.get(node_info.name)
            labels = record.labels if record is not None else {}
            for placed in node_info.pods_with_required_anti_affinity:
                spec = placed.pod.get("spec") or {}
                for term in required_terms(spec, "podAntiAffinity", placed.namespace):
                    if term.matches(namespace, self.labels):
                        _count(self.existing_counts, term.topology_key, labels)

    def check(self, record):
        """(reason, resolvable) of the first check the node fails, or (None, True)."""
        labels = record.labels
        if self.affinity and not self._affinity_ok(labels):
            return AFFINITY, False
        for term in self.anti_affinity:
            value = labels.get(term.topology_key)
            if value is not None and self.anti_affinity_counts.get((term.topology_key, value)):
                return ANTI_AFFINITY, True
        for (key, value), count in self.existing_counts.items():
            if count and labels.get(key) == value:
                return EXISTING_ANTI_AFFINITY, True
        return None, True

    def _affinity_ok(self, labels) -> bool:
        found = True
        for term in self.affinity:
            value = labels.get(term.topology_key)
            if value is None:
                return False             # every topology key must exist on the node
            if not self.affinity_counts.get((term.topology_key, value)):
                found = False
        return found or (not self.affinity_counts and self.self_affine)


def _count(counts, key, labels):
    value = labels.get(key)
    if value is not None:
        pair = (key, value)
        counts[pair] = counts.get(pair, 0) + 1
