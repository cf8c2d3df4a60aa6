"""A deadline for database work on a server that may never answer (issue 22).

A PostgreSQL that accepts connections and then answers nothing (a hung server, a
dropped route, a blackholing proxy) hung a REST read for 29.7 s: libpq waits on its
socket forever, the server's own statement_timeout cannot fire for a query it never
received, and TCP keepalives are answered by the kernel of a hung server. So the
client keeps the time itself: a watchdog thread shuts the connection's socket down when
the deadline passes, which ends libpq's wait at once with an error, and `bounded`
raises NoAnswer ("no answer within N s") in its place. The connection is then
broken; Django closes it at the end of the request, the owner's writer reconnects.

One watchdog thread serves every deadline of the process (a timer thread per query
would cost a thread start per statement).
"""
import heapq
import itertools
import os
import socket
import threading
import time
import weakref
from contextlib import contextmanager
from functools import wraps

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection

DATABASE_ERRORS = (OperationalError, InterfaceError)


class NoAnswer(OperationalError):
    """The database did not answer within the deadline; the connection was shut down."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        super().__init__(f"no answer within {seconds:g} s")


class Watchdog:
    """Runs an action when its deadline passes unless disarmed first; disarm() returns
    only once the action has run or can no longer run."""

    def __init__(self, clock=time.monotonic):
        self._clock = clock
        self._armed = {}    # id -> action
        self._heap = []     # (deadline, id)
        self._ids = itertools.count()
        self._lock = threading.Condition()
        self._thread = None

    def arm(self, seconds: float, action) -> int:
        with self._lock:
            token = next(self._ids)
            self._armed[token] = action
            heapq.heappush(self._heap, (self._clock() + seconds, token))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="db-deadline",
                                                daemon=True)
                self._thread.start()
            self._lock.notify()
            return token

    def disarm(self, token: int) -> bool:
        """False when the action ran (the deadline had passed)."""
        with self._lock:
            return self._armed.pop(token, None) is not None

    def _run(self):
        with self._lock:
            while True:
                while self._heap and self._heap[0][1] not in self._armed:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._lock.wait()
                    continue
                deadline, token = self._heap[0]
                wait = deadline - self._clock()
                if wait > 0:
                    self._lock.wait(wait)
                    continue
                heapq.heappop(self._heap)
                # Run under the lock: a disarm that returns True is sure the action has
                # not run and never will (the socket it names may be closed after).
                self._armed.pop(token)()


_watchdog = Watchdog()


def _shut_down(fd: int):
    """Shut the socket behind `fd` down both ways: libpq's wait on it ends at once."""
    try:
        sock = socket.socket(fileno=os.dup(fd))
    except OSError:
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        sock.close()


@contextmanager
def bounded(connection, seconds: float):
    """Run the block's database work on Django's `connection` (PostgreSQL; others run
    unbounded) with at most `seconds` of waiting in all, else NoAnswer. Opens the
    connection first (libpq's connect_timeout bounds that)."""
    if connection.vendor != "postgresql" or not seconds:
        yield
        return
    connection.ensure_connection()
    token = _watchdog.arm(seconds, lambda fd=connection.connection.fileno(): _shut_down(fd))
    try:
        yield
    except DATABASE_ERRORS as error:
        if not _watchdog.disarm(token):
            raise NoAnswer(seconds) from error
        raise
    except BaseException:
        # Whatever else ended the block (an IntegrityError, a cancelled task), the deadline
        # goes with it: left armed, it would shut whichever socket then holds that fd.
        _watchdog.disarm(token)
        raise
    if not _watchdog.disarm(token):   # fired as the block ended: the connection is broken
        connection.close()


GRACE = 1.0   # seconds the client waits past the server's statement_timeout
# Seconds to learn who asks (a session's user, a token's row): a lookup by key, quick on a
# database that answers at all. Past it, the request is a 503 at once (health's document
# for /api/v1/health) rather than after the whole statement bound.
WHO_ASKS = 2.0
_timed = weakref.WeakSet()   # psycopg connections whose session has the statement timeout


class BoundedStatements:
    """A Django execute wrapper (connection.execute_wrapper) for the web's requests: the
    server cancels a statement running past `seconds` (its statement_timeout, set once a
    session: the work stops there, the connection stays good), and the client gives up
    GRACE later on a server that does not answer at all (NoAnswer)."""

    def __init__(self, seconds: float):
        self.seconds = seconds

    def __call__(self, execute, sql, params, many, context):
        connection = context["connection"]
        with bounded(connection, self.seconds + GRACE if self.seconds else 0):
            raw = connection.connection
            if connection.vendor == "postgresql" and self.seconds and raw not in _timed:
                # As Django's errors, so a cut here is the 503 a cut anywhere else is.
                with connection.wrap_database_errors, raw.cursor() as cursor:
                    cursor.execute("SELECT set_config('statement_timeout', %s, false)",
                                   [f"{round(self.seconds * 1000)}ms"])
                _timed.add(raw)
            return execute(sql, params, many, context)


def bounded_reads(read):
    """`read` with its statements bounded as a web request's are (SCHEDVIEW_DB_STATEMENT_TIMEOUT),
    for the web's database work outside a request's middleware: a live socket's renders and
    reads, a streamed export's pages. Unbounded, one of them on a database that answers
    nothing would hold its worker thread for ever."""
    @wraps(read)
    def bounded_read(*args, **kwargs):
        with connection.execute_wrapper(BoundedStatements(settings.SCHEDVIEW_DB_STATEMENT_TIMEOUT)):
            return read(*args, **kwargs)
    return bounded_read
