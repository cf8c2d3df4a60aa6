"""The store's memory (issue 26: the simulated cluster took 16 kB a pod)."""
import tracemalloc

import orjson

from simcluster.generate import generate_cluster
from simcluster.store import Store


def test_stored_objects_take_their_own_size_and_keep_their_bytes():
    """orjson's bytes carry its growing buffer, about twice the text: kept as they come,
    every stored pod cost twice its JSON."""
    pods = generate_cluster(5, 200, 1, seed=3).pods
    expected = [orjson.dumps({k: v for k, v in p.items() if k not in ("kind", "apiVersion")})
                for p in pods]
    store = Store()
    store.register("pods", "Pod", True, lambda item: {})
    tracemalloc.start()
    try:
        store.load("pods", pods)
        traced, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    stored = sorted(e.raw for e in store.resources["pods"].entries.values())
    assert stored == sorted(expected)                 # the same bytes lists and watches send
    assert traced < 1.3 * sum(map(len, expected))
