"""BindSender: binds leave the caller at once, are published in batches, in order, and a
failed publish is tried again until it goes through."""
import threading

from dashboard.owner.extender import bindsender
from dashboard.owner.extender.bindsender import BindSender


class Broker:
    """Records published batches; can hold the sender inside publish, or fail first."""

    def __init__(self, failures=0):
        self.batches = []
        self.failures = failures
        self.entered = threading.Event()
        self.release = threading.Event()
        self.release.set()

    def __call__(self, batch):
        self.entered.set()
        assert self.release.wait(10)
        if self.failures:
            self.failures -= 1
            raise ConnectionError("broker down")
        self.batches.append(list(batch))


def bind(n):
    return (f"uid-{n}", "default", f"p{n}", "n1")


def test_binds_queued_while_one_is_published_go_out_as_one_batch_in_order():
    broker = Broker()
    broker.release.clear()
    sender = BindSender(broker)
    sender(*bind(0))
    assert broker.entered.wait(10)            # the sender is inside publish, held there
    for n in (1, 2, 3):
        sender(*bind(n))                      # returns at once: nothing waits on the broker
    assert not sender.wait_idle(0.05)
    broker.release.set()
    assert sender.wait_idle(10)
    assert broker.batches == [[list(bind(0))], [list(bind(n)) for n in (1, 2, 3)]]
    assert sender.sent == 4


def test_a_failed_publish_is_tried_again_until_it_goes_through(monkeypatch):
    monkeypatch.setattr(bindsender, "FIRST_PAUSE", 0.01)
    broker = Broker(failures=3)
    sender = BindSender(broker)
    sender(*bind(7))
    assert sender.wait_idle(10)
    assert broker.batches == [[list(bind(7))]] and broker.failures == 0


def test_a_batch_lingers_for_the_binds_that_follow_its_first(monkeypatch):
    monkeypatch.setattr(bindsender, "LINGER", 1.0)
    broker = Broker()
    sender = BindSender(broker)
    sender(*bind(0))
    assert not broker.entered.wait(0.1)       # lingering, not publishing yet
    sender(*bind(1))
    assert sender.wait_idle(10)
    assert broker.batches == [[list(bind(0)), list(bind(1))]]
