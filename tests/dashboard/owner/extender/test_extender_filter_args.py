"""FilterArgsDecoder: a filter body decodes as orjson.loads decodes it, with the last
NodeNames list reused when the body ends with the same bytes (kube-scheduler's order:
Pod, Nodes, NodeNames, as in shared k8s-wire/extender 01)."""
import orjson
import pytest

from dashboard.owner.extender.filter_args import FilterArgsDecoder

NAMES = [f"node-{i}" for i in range(50)]


def body(name: str, names=NAMES, **extra) -> bytes:
    return orjson.dumps({"Pod": {"metadata": {"name": name, "uid": f"uid-{name}"}},
                         "Nodes": None, "NodeNames": names, **extra})


def test_the_same_names_are_decoded_once_and_the_rest_each_time():
    decode = FilterArgsDecoder()
    first, second = decode(body("a")), decode(body("b"))
    assert first == orjson.loads(body("a")) and second == orjson.loads(body("b"))
    assert second["NodeNames"] is first["NodeNames"]          # reused, not decoded again


@pytest.mark.parametrize("raw", [
    body("b", NAMES[:-1]),                                     # one node fewer
    body("b", list(reversed(NAMES))),                          # another order
    orjson.dumps({"NodeNames": NAMES, "Pod": {"metadata": {"name": "b"}}, "Nodes": None}),
    orjson.dumps({"NodeNames": ["x"], "Pod": {"a": 1, "NodeNames": NAMES}}),   # nested
    b'{"Pod":{"metadata":{"name":"b"}},"Nodes":null,"NodeNames":' + orjson.dumps(NAMES)
    + b"}",
])
def test_any_other_body_decodes_whole(raw):
    decode = FilterArgsDecoder()
    decode(body("a"))
    assert decode(raw) == orjson.loads(raw)


def test_a_nested_list_is_never_taken_for_the_names():
    decode = FilterArgsDecoder()
    nested = orjson.dumps({"NodeNames": ["x"], "Pod": {"a": 1, "NodeNames": NAMES}})
    decode(nested)
    again = orjson.dumps({"NodeNames": ["y"], "Pod": {"a": 1, "NodeNames": NAMES}})
    assert decode(again)["NodeNames"] == ["y"]


def test_a_malformed_head_is_an_error_as_before():
    decode = FilterArgsDecoder()
    decode(body("a"))
    broken = b'{"Pod":{"metadata":' + body("a")[body("a").rfind(b',"NodeNames":'):]
    with pytest.raises(orjson.JSONDecodeError):
        decode(broken)
