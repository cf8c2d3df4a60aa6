"""The owner's events, out to the browsers' groups on the channel layer.

One message per flush carries every event since the last one, so a burst of
a thousand transitions costs one send, not a thousand. Consumers pick what
their page shows.
"""
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

EVENTS_GROUP = "events"


class Publisher:
    def __init__(self, layer=None):
        self.layer = layer or get_channel_layer()
        self.sent = 0

    def publish(self, events: list, status: dict):
        if events or status:
            async_to_sync(self.layer.group_send)(
                EVENTS_GROUP, {"type": "cache.events", "events": events, "status": status})
            self.sent += len(events)
