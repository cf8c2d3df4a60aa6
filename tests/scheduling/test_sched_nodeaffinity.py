"""nodeSelector and required node affinity: every operator, terms ORed, requirements ANDed."""
import pytest

from scheduling.nodeaffinity import compile_pod, pod_matches_node
from simcluster.generate import make_node

LABELS = {"zone": "a", "disk": "ssd", "cores": "16"}


def required(*terms):
    return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": list(terms)}}}}


def expr(key, operator, *values):
    requirement = {"key": key, "operator": operator}
    if values:
        requirement["values"] = list(values)
    return {"matchExpressions": [requirement]}


@pytest.mark.parametrize("spec, matches", [
    ({}, True),
    ({"nodeSelector": {"zone": "a"}}, True),
    ({"nodeSelector": {"zone": "a", "disk": "hdd"}}, False),
    (required(expr("zone", "In", "a", "b")), True),
    (required(expr("zone", "In", "b")), False),
    (required(expr("missing", "In", "a")), False),
    (required(expr("zone", "NotIn", "b")), True),
    (required(expr("zone", "NotIn", "a")), False),
    (required(expr("missing", "NotIn", "a")), True),
    (required(expr("disk", "Exists")), True),
    (required(expr("missing", "Exists")), False),
    (required(expr("missing", "DoesNotExist")), True),
    (required(expr("disk", "DoesNotExist")), False),
    (required(expr("cores", "Gt", "8")), True),
    (required(expr("cores", "Gt", "16")), False),
    (required(expr("cores", "Lt", "32")), True),
    (required(expr("cores", "Lt", "16")), False),
    (required(expr("zone", "Gt", "1")), False),           # label not an integer
    (required(expr("cores", "Gt", "x")), False),          # value not an integer
    (required(expr("cores", "Gt", "1", "2")), False),     # more than one value
    (required(expr("zone", "Bogus", "a")), False),
    # terms are ORed
    (required(expr("zone", "In", "b"), expr("disk", "In", "ssd")), True),
    # requirements of a term are ANDed
    (required({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]},
                                    {"key": "disk", "operator": "In", "values": ["hdd"]}]}),
     False),
    # an empty term and an empty term list match nothing
    (required({}), False),
    (required(), False),
    # matchFields on metadata.name
    (required({"matchFields": [{"key": "metadata.name", "operator": "In",
                                "values": ["n1"]}]}), True),
    (required({"matchFields": [{"key": "metadata.name", "operator": "In",
                                "values": ["n2"]}]}), False),
    (required({"matchFields": [{"key": "metadata.name", "operator": "NotIn",
                                "values": ["n1"]}]}), False),
    (required({"matchFields": [{"key": "metadata.uid", "operator": "In",
                                "values": ["n1"]}]}), False),
    # both nodeSelector and affinity must hold
    ({"nodeSelector": {"zone": "b"}, **required(expr("disk", "Exists"))}, False),
])
def test_operators(spec, matches):
    node = make_node("n1", labels=LABELS)
    assert pod_matches_node({"spec": spec}, node) is matches


def test_no_constraint_compiles_to_none():
    assert compile_pod({}) is None
    assert compile_pod({"affinity": {"podAntiAffinity": {}}}) is None
