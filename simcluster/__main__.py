"""Command line: python -m simcluster serve --nodes 200 --pods 3000 --kubeconfig PATH

Prints the URL on the first line of stdout (then flushes), writes the kubeconfig if
asked, and serves until SIGINT/SIGTERM. `--replay FILE [--speed N] [--reschedule]` plays a
recording (replay.py) instead of the generated cluster; a bad line ends it before it
serves, with exit code 2 and the line's number.
"""

import argparse
import json
import signal
import sys
import threading

from simcluster.cluster import SimCluster
from simcluster.compaction import COMPACTION_INTERVAL
from simcluster.recording import RecordingError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m simcluster")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve a simulated cluster until killed")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=0, help="0 picks a free port")
    serve.add_argument("--nodes", type=int, default=200)
    serve.add_argument("--pods", type=int, default=3000)
    serve.add_argument("--zones", type=int, default=3)
    serve.add_argument("--namespaces", type=int, default=40)
    serve.add_argument("--seed", type=int, default=1)
    serve.add_argument("--pending-fraction", type=float, default=0.0)
    serve.add_argument("--churn", type=float, default=0.0, help="churn actions per second")
    serve.add_argument("--scheduler", action="store_true",
                       help="churn also binds the pods it creates, like a default scheduler")
    serve.add_argument("--no-kubelet", action="store_true",
                       help="leave terminating pods and bound Pending pods alone")
    serve.add_argument("--compaction-interval", type=float, default=COMPACTION_INTERVAL,
                       help="seconds between compactions of the history, as kube-apiserver's "
                            "--etcd-compaction-interval (versions compacted away answer 410; "
                            "0: never)")
    serve.add_argument("--bookmark-interval", type=float, default=60.0)
    serve.add_argument("--faults", type=json.loads, default={},
                       help='fault knobs as JSON, e.g. \'{"bind_failure_rate": 0.1}\'')
    serve.add_argument("--pools", type=_pool_sizes, default={},
                       help="warm pools of idle pods, e.g. web=20,batch=10")
    serve.add_argument("--pool-hold", type=float, default=0.0,
                       help="seconds a claimed pool pod runs before it turns idle again "
                            "(0: never)")
    serve.add_argument("--pool-stop-delay", type=float, default=1.0,
                       help="seconds a pool pod spends Stopping before it is Idle")
    serve.add_argument("--kubeconfig", help="write a kubeconfig for the server here")
    serve.add_argument("--replay", metavar="FILE",
                       help="start empty and play this recording (kube-scheduler-simulator's "
                            "recorder format, .gz or plain) instead of a generated cluster")
    serve.add_argument("--speed", type=float, default=1.0,
                       help="with --replay: N times the recorded pace (0: as fast as possible)")
    serve.add_argument("--reschedule", action="store_true",
                       help="with --replay: leave the recording's pods pending (nodeName "
                            "cleared) for the scheduler to place")
    return parser


def _pool_sizes(text: str) -> dict:
    """"web=20,batch=10" -> {"web": 20, "batch": 10}."""
    sizes = {}
    for part in filter(None, text.split(",")):
        name, sep, count = part.partition("=")
        if not sep or not name or not count.isdigit():
            raise argparse.ArgumentTypeError(f"not POOL=COUNT: {part!r}")
        sizes[name] = int(count)
    return sizes


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    if args.replay and args.speed < 0:
        print("simcluster: --speed must be 0 or more", file=sys.stderr)
        return 2
    try:   # a recording is checked whole here: a bad one serves nothing
        sim = SimCluster(args.nodes, args.pods, args.zones, args.seed, args.pending_fraction,
                         namespaces=args.namespaces, churn=args.churn, scheduler=args.scheduler,
                         kubelet=not args.no_kubelet,
                         compaction_interval=args.compaction_interval,
                         bookmark_interval=args.bookmark_interval, host=args.host,
                         port=args.port, faults=args.faults, pools=args.pools,
                         pool_hold=args.pool_hold, pool_stop_delay=args.pool_stop_delay,
                         replay=args.replay, replay_speed=args.speed,
                         reschedule=args.reschedule)
    except (RecordingError, OSError) as e:
        print(f"simcluster: cannot replay {e}", file=sys.stderr)
        return 2
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    sim.start()
    if args.kubeconfig:
        sim.write_kubeconfig(args.kubeconfig)
    print(sim.url, flush=True)
    done.wait()
    sim.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
