"""Binds leave the owner's thread without waiting on the broker.

The extender decides in the owner's thread; publishing each bind to Celery
there would cost a Redis round trip per pod, and the GIL hand-over any I/O brings
(about a millisecond a pod on a busy machine, a third of a filter and bind).
`BindSender` takes binds into a queue, and a thread of its own publishes what
has gathered as one batch (the batched bind task). kube-scheduler binds one pod
at a time, a few milliseconds apart, so the sender lingers LINGER seconds after
a batch's first bind for the next ones: a Celery task per pod costs the worker
more CPU than the Binding it posts. A failed publish is tried again, with pauses
doubling up to MAX_PAUSE: the pods are assumed and Binding, and a dropped bind
would leave them so until kube-scheduler's filter calls made the extender bind
them itself.
"""
import logging
import queue
import threading
import time
from typing import Callable

log = logging.getLogger(__name__)

MAX_BATCH = 500
LINGER = 0.02            # seconds a batch waits for more binds after its first
FIRST_PAUSE, MAX_PAUSE = 0.1, 2.0


class BindSender:
    """schedule_bind for the Extender: `sender(uid, namespace, name, node)` never blocks;
    `publish([[uid, namespace, name, node], ...])` runs in the sender's thread."""

    def __init__(self, publish: Callable[[list], object], *, name="bind-sender"):
        self.publish = publish
        self.sent = 0                 # binds published
        self._queue = queue.SimpleQueue()
        self._unsent = 0              # handed over, not yet published
        self._done = threading.Condition()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def __call__(self, uid: str, namespace: str, name: str, node: str) -> None:
        with self._done:
            self._unsent += 1
        self._queue.put([uid, namespace, name, node])

    def wait_idle(self, timeout: float) -> bool:
        """Whether every bind handed over so far was published within `timeout` seconds."""
        with self._done:
            return self._done.wait_for(lambda: self._unsent == 0, timeout)

    def _run(self):
        while True:
            batch = [self._queue.get()]
            until = time.monotonic() + LINGER
            while len(batch) < MAX_BATCH:
                try:
                    batch.append(self._queue.get(timeout=max(until - time.monotonic(), 0)))
                except queue.Empty:
                    break
            self._publish(batch)
            with self._done:
                self._unsent -= len(batch)
                self._done.notify_all()

    def _publish(self, batch):
        pause = FIRST_PAUSE
        while True:
            try:
                self.publish(batch)
                self.sent += len(batch)
                return
            except Exception:
                log.exception("publishing %d bind(s) failed; trying again in %.1f s",
                              len(batch), pause)
                time.sleep(pause)   # a pause before trying the broker again
                pause = min(pause * 2, MAX_PAUSE)
