"""Stored objects as compressed JSON: zstd with one dictionary trained on generated objects.

A pod's list-item JSON is about 5.9 kB and nearly all of it recurs from pod to pod
(managedFields, container specs, condition texts, label keys), so against a dictionary
of such pods it compresses to about 0.6 kB: 150,000 pods and the minutes of history
kept behind them (compaction.py) fit in a few hundred MB. The dictionary is trained
once a process, on first use, from objects the generator makes, so it is the same for
every store; objects unlike them (a replayed recording's) still round-trip, only
compressed less. Compressors and decompressors are per thread (zstd contexts are not
shared between threads).
"""

import threading
from datetime import datetime, timezone

import orjson
import zstandard

from simcluster.generate import PodSource, generate_cluster

_DICT_SIZE = 64 * 1024
_LEVEL = 3
_dictionary = None
_trained = threading.Lock()
_local = threading.local()


def pack(obj: dict) -> bytes:
    """`obj` serialized and compressed, in a bytes object of its own size: zstandard hands
    back one as large as the input could grow to (6.3 kB for a 0.5 kB pod), only shortened."""
    return bytes(memoryview(_codec()[0].compress(orjson.dumps(obj))))


def unpack(data: bytes) -> bytes:
    """The JSON bytes `pack` compressed."""
    return _codec()[1].decompress(data)


def _codec() -> tuple:
    codec = getattr(_local, "codec", None)
    if codec is None:
        d = _trained_dictionary()
        codec = _local.codec = (
            zstandard.ZstdCompressor(level=_LEVEL, dict_data=d, write_checksum=False,
                                     write_dict_id=False),
            zstandard.ZstdDecompressor(dict_data=d))
    return codec


def _trained_dictionary() -> zstandard.ZstdCompressionDict:
    global _dictionary
    with _trained:
        if _dictionary is None:
            _dictionary = zstandard.train_dictionary(_DICT_SIZE, _samples(), level=_LEVEL)
            _dictionary.precompute_compress(level=_LEVEL)
        return _dictionary


def _samples() -> list:
    """Bound, pending and churned pods and nodes, as the generator and churn make them."""
    cluster = generate_cluster(nodes=40, pods=1000, zones=3, seed=0, pending_fraction=0.1)
    source = PodSource(seed=0)
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    return [orjson.dumps(obj) for obj in (*cluster.pods, *cluster.nodes,
                                           *(source.pending_pod(now) for _ in range(200)))]
