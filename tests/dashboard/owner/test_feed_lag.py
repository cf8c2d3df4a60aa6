"""The feed's lag in seconds: stamped when the decoder read an item off the watch stream,
measured by the owner (dashboard/owner/feed_lag.py), published with its status and scraped as a
gauge. Time is passed in."""
import marshal
import queue
from types import SimpleNamespace

from prometheus_client import CollectorRegistry

from schedcache import Cache
from simcluster.generate import make_node

from dashboard.kube.reflector import Watched
from dashboard.owner import decoder
from dashboard.owner.comparing import CompareRequest
from dashboard.owner.decoder import DecodedEvents, DecodedFeed
from dashboard.owner.feed_lag import FeedLag
from dashboard.owner.listed_pages import ListedPages
from dashboard.owner.owner import CacheOwner


class Clock:
    def __init__(self, now):
        self.now = now

    def __call__(self):
        return self.now


def node_events(name, received):
    return DecodedEvents("nodes", [("ADDED", make_node(name))], received)


def test_nothing_waiting_and_nothing_waited_is_no_lag():
    assert FeedLag(queue.Queue()).seconds(now=100.0) == 0.0


def test_the_oldest_queued_items_age_grows_while_nothing_is_applied():
    feed = queue.Queue()
    lag = FeedLag(feed)
    feed.put(CompareRequest(ListedPages(), ListedPages(), "1"))   # no stamp: looked past
    feed.put(node_events("n1", received=90.0))
    feed.put(node_events("n2", received=95.0))
    assert lag.seconds(now=100.0) == 10.0
    assert lag.seconds(now=130.0) == 40.0


def test_an_item_applied_before_the_flush_counts_until_the_next_window():
    lag = FeedLag(queue.Queue())
    lag.applied(92.5, now=100.0)
    lag.applied(99.0, now=100.0)
    lag.applied(None, now=100.0)                  # an unstamped item changes nothing
    assert lag.seconds(now=100.5) == 7.5          # the queue is empty, the wait was real
    lag.new_window()
    assert lag.seconds(now=100.5) == 0.0


def test_the_owner_publishes_its_lag_with_each_flush_and_scrape():
    clock = Clock(1000.0)
    owner = CacheOwner(Cache(ttl=30), clock=clock)
    owner.feed.put(node_events("n1", received=997.0))
    owner.feed.put(node_events("n2", received=999.5))
    assert owner.status()["feed_lag"] == 3.0        # the oldest has waited 3 s
    clock.now = 1001.0
    assert owner.drain_feed() == 2
    assert owner.cache.node_count() == 2
    assert owner.status()["feed_lag"] == 4.0        # n1 waited 4 s before it was applied
    owner.flush()
    registry = CollectorRegistry()
    registry.register(owner.metrics)
    assert registry.get_sample_value("schedview_feed_lag_seconds") == 4.0
    assert owner.status()["feed_lag"] == 0.0        # caught up, and a new window


def test_the_decoder_stamps_each_message_with_its_oldest_items_arrival(monkeypatch):
    stamps = iter([50.0, 50.25, 51.0])
    monkeypatch.setattr(decoder, "time", SimpleNamespace(time=lambda: next(stamps)))
    outbox = decoder._Outbox()
    for i in range(3):
        outbox.sink(Watched("nodes", "ADDED", make_node(f"n{i}"), str(i + 1)))
    sent = []
    decoder._ship(SimpleNamespace(send_bytes=sent.append), outbox, {}, {})
    views, received, entries, comparisons = marshal.loads(sent[0])
    assert received == 50.0 and comparisons == []
    feed = queue.Queue()
    feed.put(DecodedFeed(entries, received))       # queued as bytes: its stamp counts
    assert FeedLag(feed).seconds(53.0) == 3.0
    assert [(item.kind, len(item.events), item.received) for item in
            feed.get().unpack()] == [("nodes", 3, 50.0)]
