"""The messages the live pages' groups (keys.EVENTS_GROUP, keys.POOLS_GROUP) carry.

Channels delivers a message to each member's method named by its type: "cache.events"
calls the consumers' `cache_events`.
"""

EVENTS = "cache.events"
OWNER_LEADING = "owner_leading"   # the event kind of an owner taking the lease


def events_message(events: list, status: dict) -> dict:
    """The owner's flush: every event since the last one (CacheEvent fields and `seq`),
    and its status."""
    return {"type": EVENTS, "events": events, "status": status}


def pools_changed_message() -> dict:
    """The pools process: what the pool panel shows changed (it carries no events)."""
    return {"type": EVENTS, "events": [], "pools": True}
