"""A pod's nodeSelector and required node affinity, compiled once into a matcher.

The matcher takes a node's labels and name and answers whether the pod may go
there. Rules as upstream (component-helpers nodeaffinity):

- every nodeSelector entry must equal the node's label;
- requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms are ORed;
  within a term matchExpressions and matchFields are ANDed; a term with
  neither matches no node, and an empty term list matches no node;
- In / NotIn / Exists / DoesNotExist / Gt / Lt on labels; Gt and Lt need one
  integer value and an integer label; a malformed requirement matches nothing;
- matchFields supports only `metadata.name` with In / NotIn.
"""
from typing import Callable, Optional

Matcher = Callable[[dict, str], bool]


def _never(labels, name):
    return False


def _parse_int(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def compile_expression(expression) -> Callable[[dict], bool]:
    """One matchExpressions requirement -> labels -> bool."""
    key = expression.get("key") or ""
    operator = expression.get("operator")
    values = list(expression.get("values") or ())
    if operator == "In":
        wanted = frozenset(values)
        return lambda labels: key in labels and labels[key] in wanted
    if operator == "NotIn":
        unwanted = frozenset(values)
        return lambda labels: labels.get(key) not in unwanted if key in labels else True
    if operator == "Exists":
        return lambda labels: key in labels
    if operator == "DoesNotExist":
        return lambda labels: key not in labels
    if operator in ("Gt", "Lt"):
        bound = _parse_int(values[0]) if len(values) == 1 else None
        if bound is None:
            return lambda labels: False

        def compare(labels):
            actual = _parse_int(labels.get(key))
            if actual is None:
                return False
            return actual > bound if operator == "Gt" else actual < bound
        return compare
    return lambda labels: False


def compile_field(requirement) -> Callable[[str], bool]:
    """One matchFields requirement -> node name -> bool (only metadata.name is a field)."""
    if requirement.get("key") != "metadata.name":
        return lambda name: False
    values = frozenset(requirement.get("values") or ())
    operator = requirement.get("operator")
    if operator == "In":
        return lambda name: name in values
    if operator == "NotIn":
        return lambda name: name not in values
    return lambda name: False


def compile_term(term) -> Matcher:
    expressions = [compile_expression(e) for e in (term.get("matchExpressions") or ())]
    fields = [compile_field(f) for f in (term.get("matchFields") or ())]
    if not expressions and not fields:
        return _never

    if len(expressions) == 1 and not fields:
        only = expressions[0]
        return lambda labels, name: only(labels)

    def match(labels, name):
        for expression in expressions:
            if not expression(labels):
                return False
        for requirement in fields:
            if not requirement(name):
                return False
        return True
    return match


def required_terms(spec):
    """The required nodeSelectorTerms list, or None when the pod sets no required affinity."""
    affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return None
    return list(required.get("nodeSelectorTerms") or ())


def compile_pod(spec) -> Optional[Matcher]:
    """The pod's node matcher, or None when it constrains nothing (every node matches)."""
    selector = dict(spec.get("nodeSelector") or {})
    terms = required_terms(spec)
    if not selector and terms is None:
        return None
    compiled = [compile_term(t) for t in terms] if terms is not None else None
    if not selector and len(compiled) == 1:
        return compiled[0]
    selector_items = tuple(selector.items())

    def match(labels, name):
        for key, value in selector_items:
            if labels.get(key) != value:
                return False
        if compiled is None:
            return True
        for term in compiled:
            if term(labels, name):
                return True
        return False
    return match


def pod_matches_node(pod, node) -> bool:
    """Convenience: does `pod` (Mapping) accept `node` (Mapping)?"""
    matcher = compile_pod(pod.get("spec") or {})
    if matcher is None:
        return True
    metadata = node.get("metadata") or {}
    return matcher(metadata.get("labels") or {}, metadata.get("name") or "")
