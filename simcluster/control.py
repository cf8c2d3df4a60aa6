"""The control endpoints under /simcluster/v1/, so tests in other processes can flip knobs.

    GET  /simcluster/v1/state          counts, events in each history, resourceVersion, open
                                       watches, all knobs, and the replay's position
                                       (replay.py) when one plays
    POST /simcluster/v1/churn          {"rate": 50, "scheduler": true, "weights": {...}}
    POST /simcluster/v1/faults         {"bind_failure_rate": 0.2, "bind_failure_code": 409,
                                        "bind_delay": 0.5, "binding_refusal_rate": 0.1,
                                        "binding_refused_namespaces": "team,ci",
                                        "lose_event_rate": 0.1,
                                        "update_conflict_rate": 0.3,
                                        "silent_watches": true,
                                        "forbidden_resources": "persistentvolumeclaims"}
    POST /simcluster/v1/kubelet        {"auto": true, "finish_deletes": true,
                                        "start_pods": true, "start_delay": 1.0,
                                        "grace_cap": 2.0}
    POST /simcluster/v1/pools          {"create": {"web": 20}, "hold": 5.0, "stop_delay": 1.0}
    POST /simcluster/v1/weather        {"episodes": ["lost-events", "failing-binds"],
                                        "calm": 240, "length": 60, "first_in": 0}
                                       (fault episodes in turn, episodes.py; [] for none)
    POST /simcluster/v1/drop-watches   {"abrupt": false}
    POST /simcluster/v1/compact        {}
    POST /simcluster/v1/kill           {"seconds": 5}   (the API goes down, then comes back)

Each answers 200 with JSON (the new state of what it changed), 400 on bad input.
"""


def handle(cluster, method: str, action: str, body: dict) -> tuple:
    """(status code, reply) for one control request against a SimCluster."""
    try:
        if method == "GET" and action == "state":
            return 200, cluster.state()
        if method != "POST":
            return 405, {"error": f"{method} not allowed on {action}"}
        if action == "churn":
            return 200, cluster.churn.update(**body)
        if action == "faults":
            return 200, cluster.faults.update(**body)
        if action == "kubelet":
            return 200, cluster.kubelet.update(**body)
        if action == "pools":
            return 200, cluster.pools.update(**body)
        if action == "weather":
            return 200, cluster.weather.update(**body)
        if action == "drop-watches":
            return 200, {"dropped": cluster.drop_watches(abrupt=bool(body.get("abrupt")))}
        if action == "compact":
            return 200, {"resourceVersion": str(cluster.compact())}
        if action == "kill":
            seconds = float(body.get("seconds", 5))
            cluster.kill_later(seconds)
            return 200, {"down_for_seconds": seconds}
        return 404, {"error": f"no control action {action!r}"}
    except (TypeError, ValueError) as e:
        return 400, {"error": str(e)}
