"""Waiting for a condition another thread or process brings about: poll it, with a deadline.

Tests never sleep to synchronise: they wait for what they need, and fail saying what
never came."""
import asyncio
import time

INTERVAL = 0.05    # seconds between two looks


def wait_for(predicate, timeout=60.0, what="the condition", interval=INTERVAL):
    """Poll `predicate` until it returns something truthy, and return that; fail after
    `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


async def wait_for_async(predicate, timeout=60.0, what="the condition", interval=INTERVAL):
    """wait_for in an event loop, for a coroutine function `predicate`."""
    deadline = time.monotonic() + timeout
    while True:
        value = await predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        await asyncio.sleep(interval)
