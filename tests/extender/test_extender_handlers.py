"""The owner's command handlers: results pass through, user errors become 400s."""
import pytest

from dashboard.extender.handlers import OPS, command_handlers
from dashboard.feed.commands import CommandError

from extender_builders import bind_args, filter_args


def test_handlers_forward_and_refuse_with_400(world):
    handlers = command_handlers(world.extender)
    assert set(handlers) == set(OPS)
    nodes = [world.node("n1")]
    pod = world.pod("p", requests={"cpu": "1"})
    assert handlers["extender_filter"](filter_args(pod, nodes), "kube-scheduler")["NodeNames"] \
        == ["n1"]
    assert handlers["extender_bind"](bind_args(pod, "n1"), "kube-scheduler") == {"Error": ""}
    assert handlers["extender_status"]({"uid": "uid-p"}, "alice")["state"] == "Binding"
    assert handlers["extender_status"]({"uid": "nope"}, "alice") == {"uid": "nope",
                                                                      "state": "Unknown"}
    with pytest.raises(CommandError) as caught:
        handlers["extender_filter"]({"Pod": {"metadata": {}}, "NodeNames": []}, "x")
    assert caught.value.status == 400 and "uid" in caught.value.message
    with pytest.raises(CommandError) as caught:
        handlers["extender_bind"](dict(bind_args(pod, "n1"), PodUID="ghost"), "x")
    assert caught.value.status == 400
