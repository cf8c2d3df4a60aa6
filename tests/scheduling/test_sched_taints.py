"""The toleration x taint matrix."""
import pytest

from scheduling.taints import first_untolerated, node_filter_taints, pod_tolerations, tolerates


def tol(key="", operator="Equal", value="", effect=""):
    return pod_tolerations({"tolerations": [{"key": key, "operator": operator, "value": value,
                                             "effect": effect}]})[0]


TAINT = ("dedicated", "gpu", "NoSchedule")


@pytest.mark.parametrize("toleration, tolerated", [
    (tol("dedicated", "Equal", "gpu", "NoSchedule"), True),
    (tol("dedicated", "Equal", "gpu"), True),                  # empty effect: any effect
    (tol("dedicated", "Equal", "cpu", "NoSchedule"), False),   # other value
    (tol("other", "Equal", "gpu", "NoSchedule"), False),       # other key
    (tol("dedicated", "Equal", "gpu", "NoExecute"), False),    # other effect
    (tol("dedicated", "Exists"), True),                        # any value
    (tol("dedicated", "Exists", effect="NoExecute"), False),
    (tol("", "Exists"), True),                                 # empty key + Exists: everything
    (tol("", "Exists", effect="NoSchedule"), True),
    (tol("", "Exists", effect="NoExecute"), False),
    (tol("", "Equal"), False),
    (tol("dedicated", "", "gpu"), True),                       # empty operator means Equal
    (tol("dedicated", "Bogus", "gpu"), False),
])
def test_matrix(toleration, tolerated):
    assert tolerates(toleration, TAINT) is tolerated


def test_prefer_no_schedule_is_not_a_filter_taint():
    node = {"spec": {"taints": [{"key": "a", "value": "1", "effect": "PreferNoSchedule"},
                                {"key": "b", "effect": "NoExecute"},
                                {"key": "c", "value": "3", "effect": "NoSchedule"}]}}
    assert node_filter_taints(node) == (("b", "", "NoExecute"), ("c", "3", "NoSchedule"))


def test_first_untolerated():
    taints = (("a", "1", "NoSchedule"), ("b", "2", "NoExecute"))
    assert first_untolerated(taints, ()) == ("a", "1", "NoSchedule")
    assert first_untolerated(taints, (tol("a", "Exists"),)) == ("b", "2", "NoExecute")
    assert first_untolerated(taints, (tol("", "Exists"),)) is None
