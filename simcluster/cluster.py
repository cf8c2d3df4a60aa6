"""SimCluster: a generated cluster served over real HTTP, with churn, kubelets and faults.

    with SimCluster(nodes=50, pods=1000, churn=20).start() as sim:
        client = kubernetes.client.CoreV1Api(sim.api_client())
        ...
        sim.faults.update(bind_failure_rate=0.5)
        sim.drop_watches()

Everything a test may want to change at runtime is a method here (or a knob on
.churn, .faults, .kubelet, .pools, or the fault episodes of .weather); control.py exposes
the same over HTTP.
"""

import threading
from dataclasses import dataclass

import orjson

from simcluster import control
from simcluster.churn import Churn
from simcluster.compaction import COMPACTION_INTERVAL, Compactor
from simcluster.episodes import Weather
from simcluster.faults import Faults
from simcluster.generate import Cluster, PodSource, generate_pods
from simcluster.kubeconfig import write_kubeconfig
from simcluster.kubelet import Kubelet
from simcluster.pools import WarmPools
from simcluster.replay import Replay
from simcluster.resources import Api
from simcluster.server import ApiServer
from simcluster.store import Store
from simcluster.watch import Watchers

SYSTEM_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")


@dataclass
class Settings:
    bookmark_interval: float = 60.0   # seconds between periodic BOOKMARKs
    watch_timeout: float = 1800.0     # for watches that send no timeoutSeconds


class SimCluster:
    def __init__(self, nodes: int = 20, pods: int = 200, zones: int = 3, seed: int = 1,
                 pending_fraction: float = 0.0, *, cluster: Cluster | None = None,
                 namespaces: int = 40, churn: float = 0.0, scheduler: bool = False,
                 kubelet: bool = True, compaction_interval: float = COMPACTION_INTERVAL,
                 bookmark_interval: float = 60.0,
                 watch_timeout: float = 1800.0, host: str = "127.0.0.1", port: int = 0,
                 faults: dict | None = None, pools: dict | None = None,
                 pool_hold: float = 0.0, pool_stop_delay: float = 1.0,
                 replay=None, replay_speed: float = 1.0, reschedule: bool = False):
        """`cluster` (from generate_cluster) replaces the nodes/pods/zones arguments;
        `kubelet=False` leaves terminating pods and bound Pending pods as they are until
        something calls `.kubelet.step()` (or sets its `auto` knob). `pools` ({"web": 20})
        adds warm pools of idle pods, handed back idle `pool_hold` seconds after a claim
        (0: never; see pools.py). `compaction_interval` (seconds; 0: never) spaces the
        compactions of the history, as kube-apiserver's (compaction.py). `replay` (a recording's
        path) starts the cluster empty and plays it from start() at `replay_speed` (replay.py), pods left pending with
        `reschedule`; a bad recording raises RecordingError here."""
        self.store = Store()
        self.compactor = Compactor(self.store, compaction_interval)
        self.api = Api(self.store, seed=seed)
        if replay is not None:
            cluster = Cluster()   # the recording's listing is the cluster
        if cluster is None:   # each pod stored as made: 150,000 never exist as dicts at once
            cluster = Cluster()
            self.store.load("pods", generate_pods(cluster, nodes, pods, zones, seed,
                                                  pending_fraction, namespaces=namespaces))
        else:
            self.store.load("pods", cluster.pods)
        self.store.load("nodes", cluster.nodes)
        for ns in sorted({*SYSTEM_NAMESPACES, *(key.split("/", 1)[0]
                                                for key in self.store.resources["pods"].keys)}):
            self.api.ensure_namespace(ns)
        self.faults = Faults(seed=seed)
        self.faults.update(**(faults or {}))
        self.store.lose_event = self.faults.lose_event
        self.watchers = Watchers(self.store)
        self.settings = Settings(bookmark_interval, watch_timeout)
        self.churn = Churn(self.api, PodSource(seed, namespaces, zones), rate=churn,
                           scheduler=scheduler, seed=seed)
        self.kubelet = Kubelet(self.api, auto=kubelet, seed=seed)
        self.pools = WarmPools(self.api, hold=pool_hold, stop_delay=pool_stop_delay)
        for pool, count in (pools or {}).items():
            self.pools.create(pool, count)
        self.weather = Weather(self)   # fault episodes: none until told (episodes.py)
        self.replay = None if replay is None else Replay(
            self.api, replay, speed=replay_speed, reschedule=reschedule)
        self._address = (host, port)
        self._server = None
        self._server_lock = threading.Lock()

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> "SimCluster":
        """Serve in background threads; returns self (the port is chosen if 0)."""
        self._serve()
        self.compactor.start()
        self.churn.start()
        self.kubelet.start()
        self.pools.start()
        if self.replay is not None:
            self.replay.start()
        return self

    def _serve(self) -> None:
        with self._server_lock:
            self._server = ApiServer(self._address, self)
            self._address = self._server.server_address[:2]
            threading.Thread(target=self._server.serve_forever, args=(0.05,),
                             name="simcluster-http", daemon=True).start()

    def stop(self) -> None:
        if self.replay is not None:
            self.replay.stop()
        self.weather.stop()
        self.compactor.stop()
        self.churn.stop()
        self.kubelet.stop()
        self.pools.stop()
        self._shutdown_server()

    def _shutdown_server(self) -> None:
        with self._server_lock:
            server, self._server = self._server, None
        if server is None:
            return
        self.watchers.drop_all(abrupt=True)
        server.shutdown()
        server.server_close()
        server.close_connections()

    def kill(self) -> None:
        """The API server goes away: listener closed, connections cut, watches broken."""
        self._shutdown_server()

    def restore(self) -> None:
        """Serve again on the same address, with the same state."""
        if self._server is None:
            self._serve()

    def kill_later(self, seconds: float) -> None:
        """kill() right after the current request is answered, restore() after `seconds`."""
        def outage():
            self.kill()
            threading.Timer(seconds, self.restore).start()
        threading.Timer(0.05, outage).start()

    def __enter__(self) -> "SimCluster":
        return self if self._server else self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def url(self) -> str:
        host, port = self._address
        return f"http://{host}:{port}"

    # -- faults and control ----------------------------------------------------------------

    def drop_watches(self, abrupt: bool = False) -> int:
        """End every open watch (abrupt: cut the connection without the final chunk)."""
        return self.watchers.drop_all(abrupt)

    def compact(self) -> int:
        """Forget the watch history: resuming from any older resourceVersion gets 410."""
        return self.store.compact()

    def control(self, method: str, action: str, body: dict) -> tuple:
        return control.handle(self, method, action, body)

    def state(self) -> dict:
        with self.store.lock:
            counts = {name: len(r.entries) for name, r in self.store.resources.items()}
            history = {name: len(r.events) for name, r in self.store.resources.items()}
            rv = self.store.rv
        return {"url": self.url, "resourceVersion": str(rv), "counts": counts,
                "history": history,
                "watches": self.watchers.count(), "watches_opened": self.watchers.opened,
                "churn": self.churn.knobs(),
                "faults": self.faults.knobs(), "kubelet": self.kubelet.knobs(),
                "pools": self.pools.knobs(), "weather": self.weather.state(),
                "replay": None if self.replay is None else self.replay.state()}

    # -- clients and accessors -------------------------------------------------------------

    def write_kubeconfig(self, path) -> str:
        return write_kubeconfig(path, self.url)

    def api_client(self):
        """A kubernetes.client.ApiClient pointed at this server."""
        from kubernetes import client
        config = client.Configuration(host=self.url)
        config.api_key = {"authorization": "simcluster"}
        config.api_key_prefix = {"authorization": "Bearer"}
        return client.ApiClient(config)

    @property
    def resource_version(self) -> int:
        return self.store.rv

    def pod(self, namespace: str, name: str) -> dict | None:
        entry = self.store.get("pods", f"{namespace}/{name}")
        return orjson.loads(entry.raw) if entry else None

    def node(self, name: str) -> dict | None:
        entry = self.store.get("nodes", name)
        return orjson.loads(entry.raw) if entry else None

    def pods(self, namespace: str | None = None) -> list:
        _, _, entries, _ = self.store.snapshot("pods", None,
                                               f"{namespace}/" if namespace else "")
        return [orjson.loads(e.raw) for e in entries]

    def nodes(self) -> list:
        _, _, entries, _ = self.store.snapshot("nodes")
        return [orjson.loads(e.raw) for e in entries]
