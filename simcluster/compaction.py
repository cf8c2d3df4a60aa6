"""History kept by time, as kube-apiserver keeps etcd's: compacted every five minutes.

kube-apiserver's compactor (`--etcd-compaction-interval`, 5 m by default; the
captures' server ran with 5m, see shared k8s-wire/README) compacts, at each tick,
up to the revision it noted at the tick before, so history lives between one and
two intervals and a busy cluster keeps more events than a quiet one. A continue
token or resourceVersion from before the compacted revision then answers 410
(captures 99, 99c), and one still inside the window answers a consistent snapshot
(capture 36).
"""

import threading

from simcluster.store import Store

COMPACTION_INTERVAL = 300.0   # seconds, kube-apiserver's default


class Compactor:
    """`tick()` compacts to the version noted at the previous tick and notes the current
    one; `start()` ticks every `interval` seconds in a thread until `stop()`."""

    def __init__(self, store: Store, interval: float = COMPACTION_INTERVAL):
        self.store = store
        self.interval = float(interval)
        self.noted = 0            # the version the next tick compacts to
        self._stop = threading.Event()
        self._thread = None

    def tick(self) -> int:
        """One compaction; returns the version compacted to."""
        target, self.noted = self.noted, self.store.rv
        return self.store.compact(target)

    def start(self) -> "Compactor":
        if self.interval > 0 and self._thread is None:
            self._thread = threading.Thread(target=self._run, name="simcluster-compactor",
                                            daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.tick()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
