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
import marshal

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

    __slots__ = ("topology_key", "namespaces", "selects", "lookup", "keys")

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
        selector = term.get("labelSelector")
        self.selects = compile_label_selector(selector)
        self.lookup = _lookup(selector)
        self.keys = _selector_keys(selector)

    def matches(self, namespace, labels) -> bool:
        return ((self.namespaces is None or namespace in self.namespaces)
                and self.selects(labels or {}))


def _selector_keys(selector) -> frozenset:
    """The label keys a selector reads: whatever else a pod carries cannot change whether
    it is selected."""
    if not selector:
        return frozenset()
    return frozenset((*(selector.get("matchLabels") or {}),
                      *((e.get("key") or "") for e in selector.get("matchExpressions") or ())))


def _lookup(selector):
    """(key, values): a label every pod the selector selects carries with one of the
    values (its first matchLabels entry or In expression), or None (then every pod must
    be tried)."""
    if not selector:
        return None
    for key, value in (selector.get("matchLabels") or {}).items():
        return key, (value,)
    for expression in selector.get("matchExpressions") or ():
        if expression.get("operator") == "In":
            return expression.get("key") or "", tuple(expression.get("values") or ())
    return None


def own_terms(spec, namespace) -> tuple:
    """(required podAffinity terms, required podAntiAffinity terms) of a pending pod."""
    return (required_terms(spec, "podAffinity", namespace),
            required_terms(spec, "podAntiAffinity", namespace))


def required_terms(spec, kind, namespace) -> tuple:
    """The compiled required terms of `kind` ("podAffinity" or "podAntiAffinity")."""
    affinity = ((spec.get("affinity") or {}).get(kind)) or {}
    return tuple(_shared_term(t, namespace) for t in
                 (affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or ()))


# Placed pods' anti-affinity terms, compiled once per pod version and shared by equal
# terms (a workload's replicas carry the same): decoding every such pod on every
# diagnosis would cost more than the whole filter pass (bench/diagnosis_bench.py).
_MEMO_MAX = 100_000   # then start afresh, so pods long gone are not kept forever
_terms = {}           # (namespace, frozen term) -> Term
_placed_terms = {}    # (uid, resourceVersion) -> the placed pod's required anti-affinity


def _shared_term(term, namespace) -> Term:
    key = (namespace, marshal.dumps(term))
    shared = _terms.get(key)
    if shared is None:
        if len(_terms) >= _MEMO_MAX:
            _terms.clear()
        shared = _terms[key] = Term(term, namespace)
    return shared


def placed_anti_affinity(info) -> tuple:
    """The required anti-affinity terms of a placed pod (a schedcache PodInfo)."""
    key = (info.key, info.resource_version)
    terms = _placed_terms.get(key)
    if terms is None:
        if len(_placed_terms) >= _MEMO_MAX:
            _placed_terms.clear()
        terms = _placed_terms[key] = required_terms(info.pod.get("spec") or {},
                                                    "podAntiAffinity", info.namespace)
    return terms


def _add(table, key, name, delta):
    nodes = table.setdefault(key, {})
    count = nodes.get(name, 0) + delta
    if count:
        nodes[name] = count
    else:
        del nodes[name]
        if not nodes:
            del table[key]


class PlacedPods:
    """What inter-pod affinity reads of the placed pods, kept node by node: a node's pods
    are read again only when its generation moved, so a diagnosis does not walk every
    pod of the cluster (bench/diagnosis_bench.py).

    `anti`: a placed pod's required anti-affinity Term -> {node: pods carrying it}, kept
    always (any pod may be refused by it). `groups`: the placed pods alike in namespace and
    in the labels of the keys some term has read (`named`), as (namespace, the values of
    those keys in `named` order, None where a pod has none) -> {node: pods}, kept from the
    first pod with affinity terms on (`refresh(terms=...)`): no term can tell the pods of a
    group apart, and labels no term reads (a pod-template-hash, a label each pod of a
    StatefulSet or a relabelled pod carries alone) would otherwise make a group of nearly
    every pod. A term reading a key not yet named splits them: the groups are read again
    from every node. `by_label` holds the pairs of the label keys some term has looked up
    (`indexed`), each from the first such lookup on."""

    def __init__(self):
        self.anti = {}
        self.groups = {}
        self.group_labels = {}   # group key -> its pods' labels of the named keys
        self.by_label = {}       # (label key, value) -> the groups with it: the one group's
                                 # key, or {group key: None} when more than one (most pairs
                                 # have one group: a dict each cost a placed pod 0.3 kB)
        self.indexed = set()     # the label keys whose pairs by_label holds
        self.named = ()          # the label keys some term has read (sorted): groups are
                                 # alike in them
        self._anti_nodes = {}    # node -> (generation, its Terms)
        self._group_nodes = {}   # node -> (generation, {its group keys: pods})
        self._group_keys = {}    # group key -> the one equal key object the tables share
        # (records, their generation) each table was last brought to: a snapshot that has
        # not moved needs no pass over its nodes
        self._anti_at = self._groups_at = None

    def refresh(self, records, terms=()):
        """Brought to `records`; the groups too when `terms` (the pending pod's own inter-pod
        terms) has any, alike in every key a term has read so far."""
        at = (records, records.generation)
        if self._anti_at != at:
            self._follow(records, self._anti_nodes, self._read_terms, self._unread_terms)
            self._anti_at = at
        if not terms:
            return
        named = tuple(sorted(set(self.named).union(*(term.keys for term in terms))))
        if named != self.named:
            self.named = named
            self.groups, self.group_labels, self.by_label = {}, {}, {}
            self._group_nodes, self._group_keys, self._groups_at = {}, {}, None
        if self._groups_at != at:
            self._follow(records, self._group_nodes, self._read_groups, self._unread_groups)
            self._groups_at = at

    def candidates(self, term):
        """The group keys that may match `term` (every group when it has no lookup)."""
        if term.lookup is None:
            return list(self.groups)
        key, values = term.lookup
        if key not in self.indexed:
            self._index(key)
        found = []
        for value in values:
            groups = self.by_label.get((key, value))
            if groups is None:
                continue
            if groups.__class__ is dict:
                found.extend(groups)
            else:
                found.append(groups)
        return found

    @staticmethod
    def _follow(records, nodes, read, unread):
        for record in records.ordered:
            known = nodes.get(record.name)
            if known is None or known[0] != record.generation:
                if known is not None:
                    unread(record.name, known[1])
                nodes[record.name] = (record.generation, read(record))
        if len(nodes) != len(records.ordered):
            for name in [n for n in nodes if n not in records.by_name]:
                unread(name, nodes.pop(name)[1])

    def _read_terms(self, record) -> list:
        terms = []
        for info in record.info.pods_with_required_anti_affinity:
            for term in placed_anti_affinity(info):
                terms.append(term)
                _add(self.anti, term, record.name, 1)
        return terms

    def _unread_terms(self, name, terms):
        for term in terms:
            _add(self.anti, term, name, -1)

    def _read_groups(self, record) -> dict:
        """The node's groups, each with its pods. Pods with equal labels share one labels
        dict (schedcache.podinfo): its named values are picked once per dict and namespace.
        The key of a group is one object however many nodes hold it; `group_labels` holds
        its named pairs as labels, for the terms to match."""
        counts, keys_of, named = {}, {}, self.named
        unlabelled = (None,) * len(named)
        for info in record.info.pods:
            labels = info.labels
            seen = (info.namespace, id(labels))
            key = keys_of.get(seen)
            if key is None:
                key = keys_of[seen] = (info.namespace, tuple(map(labels.get, named))
                                       if labels else unlabelled)
            counts[key] = counts.get(key, 0) + 1
        kept = {}
        for key, pods in counts.items():
            shared = self._group_keys.get(key)
            if shared is None:
                shared = self._group_keys[key] = key
                self.group_labels[key] = labels = {
                    k: v for k, v in zip(named, key[1]) if v is not None}
                for pair in self._indexed_pairs(labels):
                    self._label_gained(pair, key)
            kept[shared] = pods
            _add(self.groups, shared, record.name, pods)
        return kept

    def _unread_groups(self, name, kept):
        for key, pods in kept.items():
            _add(self.groups, key, name, -pods)
            if key not in self.groups:
                del self._group_keys[key]
                for pair in self._indexed_pairs(self.group_labels.pop(key)):
                    self._label_lost(pair, key)

    def _indexed_pairs(self, labels, keys=None):
        """The (key, value) pairs of `labels` whose key is in `keys` (those indexed)."""
        for label in self.indexed if keys is None else keys:
            value = labels.get(label)
            if value is not None:
                yield label, value

    def _index(self, label):
        """by_label gains the pairs of `label` from every group there is; the groups that
        come and go keep them from now on."""
        self.indexed.add(label)
        for key, labels in self.group_labels.items():
            for pair in self._indexed_pairs(labels, (label,)):
                self._label_gained(pair, key)

    def _label_gained(self, pair, key):
        groups = self.by_label.get(pair)
        if groups is None:
            self.by_label[pair] = key
        elif groups.__class__ is dict:
            groups[key] = None
        else:
            self.by_label[pair] = {groups: None, key: None}

    def _label_lost(self, pair, key):
        groups = self.by_label[pair]
        if groups.__class__ is not dict:
            del self.by_label[pair]
            return
        del groups[key]
        if len(groups) == 1:
            self.by_label[pair] = next(iter(groups))


class InterPodAffinity:
    """The filter for one pending pod over NodeRecords and their PlacedPods (counted once
    here, by the groups of equal pods rather than pod by pod). The caller brings `placed`
    up to date, with its groups when `needs_groups(pod)`."""

    def __init__(self, pod, records, placed: PlacedPods):
        metadata, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        namespace = metadata.get("namespace") or ""
        self.labels = metadata.get("labels") or {}
        self.affinity, self.anti_affinity = own_terms(spec, namespace)
        self.affinity_counts = {}        # (topology key, value) -> pods matching every term
        self.anti_affinity_counts = {}   # (topology key, value) -> pods matching a term
        self.existing_counts = {}        # (topology key, value) -> placed pods refusing this one
        by_name = records.by_name
        if self.affinity or self.anti_affinity:
            self._count_pods(placed, by_name)
        for term, nodes in placed.anti.items():
            if term.matches(namespace, self.labels):
                _count_on(self.existing_counts, term.topology_key, nodes, by_name)
        self.self_affine = all(t.matches(namespace, self.labels) for t in self.affinity)

    @property
    def active(self) -> bool:
        return bool(self.affinity or self.anti_affinity or self.existing_counts)

    def _count_pods(self, placed, by_name):
        """Only the groups a term's lookup finds are tried (PlacedPods.candidates)."""
        affinity, groups, labels_of = self.affinity, placed.groups, placed.group_labels
        if affinity:
            for key in placed.candidates(affinity[0]):
                if all(t.matches(key[0], labels_of[key]) for t in affinity):
                    for term in affinity:
                        _count_on(self.affinity_counts, term.topology_key, groups[key],
                                  by_name)
        for term in self.anti_affinity:
            for key in placed.candidates(term):
                if term.matches(key[0], labels_of[key]):
                    _count_on(self.anti_affinity_counts, term.topology_key, groups[key],
                              by_name)

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


def _count_on(counts, key, nodes, by_name):
    """Count `nodes` ({node: pods}) under their (key, value of the node's label key)."""
    for name, pods in nodes.items():
        record = by_name.get(name)
        value = record.labels.get(key) if record is not None else None
        if value is not None:
            pair = (key, value)
            counts[pair] = counts.get(pair, 0) + pods
