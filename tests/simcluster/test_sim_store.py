"""The store's memory (issue 26: the simulated cluster took 16 kB a pod)."""
import tracemalloc

import orjson

from simcluster.generate import generate_cluster
from simcluster.packing import pack, unpack
from simcluster.resources import pod_index
from simcluster.store import Store


def _pods_store() -> Store:
    store = Store()
    store.register("pods", "Pod", True, pod_index)
    return store


def test_stored_objects_are_compressed_and_keep_their_bytes():
    """Kept as JSON, every stored pod (and every state its history kept) cost its 5.9 kB;
    compressed it costs under a fifth of that, bytes object and all."""
    pods = generate_cluster(5, 200, 1, seed=3).pods
    expected = [orjson.dumps({k: v for k, v in p.items() if k not in ("kind", "apiVersion")})
                for p in pods]
    store = _pods_store()
    unpack(pack({}))   # the dictionary is trained once a process: not this store's memory
    tracemalloc.start()
    try:
        store.load("pods", pods)
        traced, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    entries = store.resources["pods"].entries.values()
    assert sorted(e.raw for e in entries) == sorted(expected)  # what lists and watches send
    assert sum(len(e.packed) for e in entries) < 0.15 * sum(map(len, expected))
    assert traced < 0.3 * sum(map(len, expected))


def test_an_update_shares_the_key_labels_and_fields_it_left_as_they_were():
    """A status change, a bind or a delete leaves most of the index as it was: the new
    entry (and the event keeping the old one) share it rather than hold a copy; every
    event of an object holds the one key string."""
    pod = generate_cluster(2, 1, 1, seed=3).pods[0]
    restarted, relabelled = orjson.loads(orjson.dumps(pod)), orjson.loads(orjson.dumps(pod))
    restarted["status"]["startTime"] = "2026-11-29T06:00:00Z"
    relabelled["metadata"]["labels"] = {"app": "other"}
    store = _pods_store()
    with store.lock:   # each written as a client's request arrives: parsed, no shared dicts
        first = store.put("pods", orjson.loads(orjson.dumps(pod)))
        restarted = store.put("pods", restarted)
        relabelled = store.put("pods", relabelled)
        gone = store.remove("pods", orjson.loads(orjson.dumps(pod)))
    assert restarted.labels is first.labels and restarted.fields is first.fields
    assert relabelled.labels == {"app": "other"} and relabelled.fields is first.fields
    assert gone.labels is relabelled.labels and gone.fields is first.fields
    events = store.resources["pods"].events
    assert [ev.prev for ev in events] == [None, first, restarted, relabelled]
    assert all(ev.key is events[0].key for ev in events)
