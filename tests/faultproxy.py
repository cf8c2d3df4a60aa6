"""A TCP proxy to put faults between a process and a server it talks to (issue 22).

    with FaultProxy(("127.0.0.1", 5432)) as proxy:   # listens on a free loopback port
        ... point the process at proxy.port ...
        proxy.set_mode(BLACKHOLE)   # connections stay open, nothing goes either way
        proxy.set_mode(PASS)        # what was held flows again
        proxy.set_mode(CUT)         # every connection closed, new ones refused

The three modes are what a server or its network does when it fails: PASS forwards both
ways; CUT is a server that went away (its connections reset, its port refusing); BLACKHOLE
is one that accepts connections but answers nothing (a hung process, a dropped route):
bytes are taken and held, none forwarded, until the mode is PASS again.

Plain threads and blocking sockets: one accepting, one pair of pumps per connection. `stop`
closes every socket and joins every thread it started.
"""
import socket
import threading

PASS, CUT, BLACKHOLE = "pass", "cut", "blackhole"
MODES = (PASS, CUT, BLACKHOLE)
CHUNK = 65536
JOIN_TIMEOUT = 5.0   # seconds stop() waits for each thread, which its closed socket wakes


class FaultProxy:
    def __init__(self, target: tuple[str, int], host: str = "127.0.0.1"):
        self.target, self.host = target, host
        self.port = 0         # the port it listens on, chosen at start and kept throughout
        self._mode = PASS
        self._changed = threading.Condition()
        self._listener = None
        self._sockets = set()   # every open socket of a connection, both sides
        self._threads = []
        self._stopped = False
        self.accepted = 0       # connections accepted so far (what a test can wait on)

    # --- the API -----------------------------------------------------------------------------
    @property
    def mode(self) -> str:
        return self._mode

    def start(self) -> "FaultProxy":
        self._listen()
        return self

    def set_mode(self, mode: str):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
        with self._changed:
            previous, self._mode = self._mode, mode
            self._changed.notify_all()
        if mode == CUT:
            self._close_listener()
            self._close_connections()
        elif previous == CUT:
            self._listen()

    def stop(self):
        with self._changed:
            self._stopped = True
            self._changed.notify_all()
        self._close_listener()
        self._close_connections()
        alive = []
        while True:   # a thread being joined may have started another (a pump)
            with self._changed:
                threads, self._threads = self._threads, []
            if not threads:
                break
            for thread in threads:
                thread.join(JOIN_TIMEOUT)
            alive += [thread.name for thread in threads if thread.is_alive()]
        if alive:
            raise RuntimeError(f"fault proxy threads did not end: {alive}")

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # --- inside ------------------------------------------------------------------------------
    def _spawn(self, target, *args, name: str):
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        # The accepting thread and each connection's spawn at once. A thread listed but not
        # started yet is not alive: pruning by is_alive alone dropped it, and stop never
        # joined it (CI saw one left behind). Started under the lock, so stop never joins
        # one that has not started.
        with self._changed:
            self._threads = [t for t in self._threads
                             if t.ident is None or t.is_alive()] + [thread]
            thread.start()

    def _listen(self):
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self.host, self.port))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self._listener = listener
        self._spawn(self._accept, listener, name=f"faultproxy-accept-{self.port}")

    def _close_listener(self):
        listener, self._listener = self._listener, None
        if listener is not None:
            _shut(listener)   # wakes its accept()

    def _close_connections(self):
        with self._changed:
            sockets, self._sockets = list(self._sockets), set()
        for sock in sockets:
            _shut(sock)

    def _track(self, sock) -> bool:
        """Keep `sock` to close at a cut; False (and closed) when the proxy cut or stopped."""
        with self._changed:
            if self._mode != CUT and not self._stopped:
                self._sockets.add(sock)
                return True
        _shut(sock)
        return False

    def _wait_passing(self) -> bool:
        """Block while blackholed; True to go on forwarding, False once cut or stopped."""
        with self._changed:
            self._changed.wait_for(lambda: self._mode != BLACKHOLE or self._stopped)
            return self._mode == PASS and not self._stopped

    def _accept(self, listener):
        while True:
            try:
                client, _ = listener.accept()
            except OSError:   # closed: a cut or stop
                _shut(listener)
                return
            self.accepted += 1
            if self._track(client):
                self._spawn(self._connect, client, name=f"faultproxy-conn-{self.port}")

    def _connect(self, client):
        # A blackholed server never sees the connection: it is made once the mode passes.
        if not self._wait_passing():
            return
        try:
            upstream = socket.create_connection(self.target, timeout=5)
            upstream.settimeout(None)
        except OSError:
            _shut(client)
            return
        if not self._track(upstream):
            _shut(client)
            return
        self._spawn(self._pump, client, upstream, name=f"faultproxy-up-{self.port}")
        self._pump(upstream, client)

    def _pump(self, source, sink):
        """Forward source's bytes to sink while passing; hold them while blackholed; end
        both at EOF, an error, a cut or stop."""
        try:
            while True:
                data = source.recv(CHUNK)
                if not data or not self._wait_passing():
                    break
                sink.sendall(data)
        except OSError:
            pass
        finally:
            with self._changed:
                self._sockets.discard(source)
                self._sockets.discard(sink)
            _shut(source)
            _shut(sink)


def _shut(sock):
    """Shut down and close `sock`, which wakes a thread blocked on it (close alone may not)."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
