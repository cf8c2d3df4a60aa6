"""Pause Python's cyclic garbage collector while building millions of objects.

Generating or loading 150,000 pods allocates tens of millions of containers; every
so many allocations the collector would walk all of them again, which costs more
than the work itself. Nothing built here forms reference cycles.
"""

import gc
from contextlib import contextmanager


@contextmanager
def gc_paused():
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
