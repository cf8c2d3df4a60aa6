"""`manage.py up`: the whole dashboard on this machine (what `make run` starts).

It starts an embedded Redis unless REDIS_URL is set, a simulated cluster
unless SCHEDVIEW_KUBECONFIG is set, migrates the database, collects static
files, then runs two cache owners (one leads, the other stands by and takes
over when it dies), the pools process, a Celery worker and beat, the web
(daphne), and with the simulated cluster kube-scheduler's stand-in. The long-running parts are children of one Supervisor: one that
dies is started again (said on the console and on the overview), Ctrl-C (or
SIGTERM) stops them all, and only a child that keeps failing right after its
start ends the command, naming it.

`--replay FILE [--speed N] [--reschedule]` starts the simulated cluster from a recording
(`manage.py record`, or kube-scheduler-simulator's recorder) instead of a generated one:
no churn, no fault episodes, no kubelet, warm pools or demo scenes, only what the
recording did, played at N times its pace; the overview says where it is. The file is
checked whole before anything starts.
"""
import os
import shutil
import signal
import socket
import sys
import time
from pathlib import Path

import urllib3
import yaml
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from simcluster.recording import RecordingError, check_recording

from dashboard import accounts
from dashboard.kube import client as kube
from dashboard.launcher import demo_scenes
from dashboard.runtime import embedded_redis, supervised, weather
from dashboard.runtime.supervisor import Child, CrashLoop, Supervisor
from dashboard.wire.clients import redis_client
from dashboard.wire.extender import parse_address

HOST = "127.0.0.1"
# The simulated API server and kube-scheduler's stand-in are other machines' work on a real
# cluster; here they share the cores with the dashboard, and yield them to it (a niceness
# of 5 weighs a third of the default's under contention: they slow down, never stop).
OTHER_MACHINES_NICE = 5


# glibc's malloc arenas a process, unless set: by default up to 8 a core, one taken by each
# thread that allocates, each keeping what it freed. Python serialises allocation under the
# GIL, so more arenas buy nothing here and keep memory apart: at 5,000 nodes two arenas
# took the simulated cluster 671 -> 452 MiB and the owner 1,219 -> 1,112 (bench/README.md).
MALLOC_ARENAS = "2"


def children_env(simulated: bool) -> dict:
    """Every child's environment: ours, two malloc arenas (MALLOC_ARENAS), and with the
    simulated cluster the stand-in scheduling its pending pods every second (unless set),
    since no kube-scheduler does."""
    env = dict(os.environ)
    env.setdefault("MALLOC_ARENA_MAX", MALLOC_ARENAS)
    if simulated:
        env.setdefault("SCHEDVIEW_SCHEDULE_PERIOD", "1")
    return env


def web(port: int, env: dict) -> Child:
    return Child("web", [sys.executable, "-m", "daphne", "-b", HOST, "-p", str(port),
                         "dashboard.asgi:application"], env=env)


def simulated_cluster(kubeconfig, nodes, pods, churn, env: dict) -> Child:
    return Child("simcluster", [sys.executable, "-m", "simcluster", "serve", "--nodes", str(nodes),
                                "--pods", str(pods), "--zones", "3", "--churn", str(churn),
                                "--pending-fraction", "0.02", "--bookmark-interval", "10",
                                *DEMO_POOLS, "--kubeconfig", str(kubeconfig)],
                 infrastructure=True, env=env, nice=OTHER_MACHINES_NICE)


def replaying_cluster(kubeconfig, recording, speed, reschedule, env: dict) -> Child:
    """The simulated cluster playing a recording: only what it did happens (no kubelet:
    the recording holds its kubelets' changes)."""
    return Child("simcluster", [sys.executable, "-m", "simcluster", "serve", "--replay",
                                str(recording), "--speed", str(speed),
                                *(("--reschedule",) if reschedule else ()), "--no-kubelet",
                                "--bookmark-interval", "10", "--kubeconfig", str(kubeconfig)],
                 infrastructure=True, env=env, nice=OTHER_MACHINES_NICE)


def checked_recording(path) -> int:
    """How many records `path` holds; CommandError naming the first bad line."""
    try:
        return check_recording(path).events
    except (RecordingError, OSError) as error:
        raise CommandError(f"--replay: {error}") from None


def wait_for_file(path, process, timeout=120.0):
    """The simulated cluster writes its kubeconfig once it serves."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        if process.poll() is not None:
            raise CommandError(f"the simulated cluster exited with code {process.returncode}")
        if time.monotonic() > deadline:
            raise CommandError(f"the simulated cluster wrote no kubeconfig in {timeout:.0f} s")
        time.sleep(0.1)


# The embedded default's weather: calm, with a fault episode every few minutes, in turn
# (simcluster/episodes.py): a minute of lost watch events (the comparer finds the drift and
# the owner relists), of failing binds (some pods are forgotten), or of a slow warm pool
# (claims wait and expire). The overview announces each as injected; between them the
# health is green. Kubelets start pods only after the cache's ttl, so a confirmation lost
# in an episode expires before the pod's next change heals it. The churn holds the pod
# count where it starts.
DEMO_WEATHER = {"episodes": ["failing-binds", "lost-events", "slow-pool"], "calm": 180,
                "length": 60}
DEMO_KUBELET = {"start_delay": 45.0}
DEMO_CHURN = {"steady": True}
# Two warm pools whose claimed pods come back idle after 8 s (+2 s stopping): "web" serves
# 2.4 claims a second, asked for 1.5 (the slow-pool episode makes it starve).
DEMO_POOLS = ("--pools", "web=24,batch=12", "--pool-hold", "8", "--pool-stop-delay", "2")
DEMO_DEMAND = "web=1.5,batch=0.5"


def cluster_url(kubeconfig) -> str:
    return yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]


def configure_simulated_cluster(kubeconfig):
    url = cluster_url(kubeconfig)
    http = urllib3.PoolManager()
    for action, knobs in (("kubelet", DEMO_KUBELET), ("churn", DEMO_CHURN),
                          ("weather", DEMO_WEATHER)):
        response = http.request("POST", f"{url}/simcluster/v1/{action}", json=knobs)
        if response.status != 200:
            raise CommandError(f"the simulated cluster refused {action} {knobs}: "
                               f"{response.data[:200]!r}")


def first_login(var_dir) -> str:
    """The login to print: on a database without users, make `operator` (the operator role:
    may act on pods) with a random password kept in var/operator-password, readable by
    this user only."""
    from django.contrib.auth import get_user_model

    users = get_user_model().objects
    password_file = var_dir / "operator-password"
    if not users.exists():
        _, password = accounts.create_user("operator", accounts.OPERATOR)
        password_file.write_text(password + "\n")
        password_file.chmod(0o600)
    if password_file.exists() and users.filter(username="operator").exists():
        return f"log in as operator, password {password_file.read_text().strip()} ({password_file})"
    return ("log in with an existing account (`manage.py createuser NAME --role operator` "
            "makes one)")


def free_port() -> int:
    """A loopback port the kernel had free a moment ago."""
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


def probed(env: dict) -> tuple[dict, str]:
    """A child's environment serving /healthz, /readyz and /metrics on a free loopback port
    (SCHEDVIEW_PROBE_ADDRESS), and that address, for the overview's link. A child that
    restarts keeps its port."""
    address = f"{HOST}:{free_port()}"
    return dict(env, SCHEDVIEW_PROBE_ADDRESS=address), address


def manage(name, env, *argv, probe=False, pass_fds=(), nice=0) -> Child:
    """A `manage.py` child; `probe`: it serves /metrics on a port of its own."""
    address = ""
    if probe:
        env, address = probed(env)
    return Child(name, [sys.executable, "manage.py", *argv], env=env, probe=address,
                 pass_fds=tuple(pass_fds), nice=nice)


def extender_socket(address: str) -> socket.socket:
    """kube-scheduler's extender address, listened on here and handed to both owners: the
    leader accepts on it. An owner binding the port itself kept it while frozen (SIGSTOP),
    and the next leader could not listen until it woke (issue 22); a socket they share
    belongs to neither."""
    try:
        sock = socket.create_server(parse_address(address), backlog=socket.SOMAXCONN)
    except OSError as exc:
        raise CommandError(f"cannot listen for kube-scheduler's extender on "
                           f"SCHEDVIEW_EXTENDER_ADDRESS={address}: {exc}") from None
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)   # as cheroot sets its own
    sock.set_inheritable(True)
    return sock


def standin(env) -> Child:
    """kube-scheduler's stand-in, scheduling the simulated cluster's pending pods."""
    return manage("standin", env, "standin", nice=OTHER_MACHINES_NICE)


def celery(name, env, *argv, probe=False) -> Child:
    address = ""
    if probe:
        env, address = probed(env)
    return Child(name, [sys.executable, "-m", "celery", "-A", "dashboard", *argv,
                        "--loglevel", "WARNING"], env=env, probe=address)


def worker_env(env: dict, var_dir) -> dict:
    """The worker's prefork children keep their metrics in files its /metrics sums
    (PROMETHEUS_MULTIPROC_DIR, emptied here: it must be empty when the worker starts)."""
    directory = var_dir / "worker-metrics"
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    return dict(env, PROMETHEUS_MULTIPROC_DIR=str(directory))


class Command(BaseCommand):
    help = ("Run the whole dashboard: embedded Redis and a simulated cluster (unless configured), "
            "migrations, the cache owner, Celery worker and beat, web.")

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")),
                            help="HTTP port on 127.0.0.1 (default: $PORT or 8000)")
        parser.add_argument("--nodes", type=int, default=100, help="simulated cluster size")
        parser.add_argument("--pods", type=int, default=2000, help="simulated pods at start")
        parser.add_argument("--churn", type=float, default=20.0,
                            help="simulated pod changes per second")
        parser.add_argument("--replay", type=Path, metavar="FILE",
                            help="start the simulated cluster from this recording (manage.py "
                                 "record's, .gz or plain) instead of a generated one")
        parser.add_argument("--speed", type=float, default=1.0,
                            help="with --replay: N times the recorded pace (0: as fast as "
                                 "possible)")
        parser.add_argument("--reschedule", action="store_true",
                            help="with --replay: leave the recording's pods pending for the "
                                 "stand-in to schedule through the extender")

    def handle(self, *args, port, nodes, pods, churn, replay, speed, reschedule, **options):
        if replay is not None:    # a bad recording starts nothing
            if "SCHEDVIEW_KUBECONFIG" in os.environ:
                raise CommandError("--replay plays into the simulated cluster: unset "
                                   "SCHEDVIEW_KUBECONFIG")
            if speed < 0:
                raise CommandError("--speed: 0 (as fast as possible) or a positive factor")
            self.stdout.write(f"schedview: replaying {checked_recording(replay)} events of "
                              f"{replay}")
        signal.signal(signal.SIGTERM, signal.default_int_handler)  # `kill` stops us as Ctrl-C does
        settings.VAR_DIR.mkdir(parents=True, exist_ok=True)
        redis = redis_client(settings.REDIS_URL)
        simulated = "SCHEDVIEW_KUBECONFIG" not in os.environ
        env = children_env(simulated)
        supervisor = Supervisor(on_change=lambda states: supervised.publish(redis, states),
                                say=self.stdout.write)
        announcer = None
        try:
            with supervisor:
                if settings.EMBEDDED_REDIS_SOCKET:
                    server = supervisor.start(Child(
                        "redis", embedded_redis.command(settings.EMBEDDED_REDIS_SOCKET),
                        infrastructure=True, env=env))
                    embedded_redis.wait_until_ready(settings.REDIS_URL, server)
                if simulated:
                    # Its faults come in announced episodes, so every state shows.
                    kubeconfig = settings.SCHEDVIEW_KUBECONFIG
                    kubeconfig.unlink(missing_ok=True)
                    cluster = supervisor.start(
                        replaying_cluster(kubeconfig, replay, speed, reschedule, env)
                        if replay else simulated_cluster(kubeconfig, nodes, pods, churn, env))
                    wait_for_file(kubeconfig, cluster)
                    if not replay:
                        configure_simulated_cluster(kubeconfig)
                        demo_scenes.stage(kube.core_api())
                    announcer = weather.Announcer(cluster_url(kubeconfig), redis).start()
                call_command("migrate", interactive=False)
                call_command("collectstatic", interactive=False, verbosity=0)
                login = first_login(settings.VAR_DIR)
                # Two owners: whichever takes the lease first leads, the other stands by.
                owner_env, shared = env, ()
                if settings.SCHEDVIEW_EXTENDER_ADDRESS:
                    listening = extender_socket(settings.SCHEDVIEW_EXTENDER_ADDRESS)
                    shared = (listening.fileno(),)
                    owner_env = dict(env, SCHEDVIEW_EXTENDER_FD=str(listening.fileno()))
                for name in ("owner-a", "owner-b"):
                    supervisor.start(manage(name, owner_env, "watch", "--id", name,
                                            probe=True, pass_fds=shared))
                supervisor.start(manage("pools", env, "pools", *(
                    ("--demand", DEMO_DEMAND) if simulated and not replay else ()), probe=True))
                supervisor.start(celery("worker", worker_env(env, settings.VAR_DIR), "worker",
                                        probe=True))
                # The children's setting: ours were read without the stand-in's period.
                # ...and it needs an extender to call.
                if (float(env.get("SCHEDVIEW_SCHEDULE_PERIOD") or 0) > 0
                        and settings.SCHEDVIEW_EXTENDER_ADDRESS):
                    supervisor.start(standin(env))
                supervisor.start(celery("beat", env, "beat", "--schedule",
                                        str(settings.VAR_DIR / "celerybeat-schedule")))
                supervisor.start(web(port, env))
                self.stdout.write(f"schedview: http://{HOST}:{port}/  (Ctrl-C stops it); {login}")
                if settings.SCHEDVIEW_EXTENDER_ADDRESS:
                    scheme = "https" if settings.SCHEDVIEW_EXTENDER_CERT else "http"
                    self.stdout.write("kube-scheduler's extender urlPrefix: "
                                      f"{scheme}://{settings.SCHEDVIEW_EXTENDER_ADDRESS}/extender")
                supervisor.run()
        except KeyboardInterrupt:
            self.stdout.write("schedview: stopped")
        except (embedded_redis.NotReady, CrashLoop) as error:
            raise CommandError(str(error)) from None
        finally:
            if announcer is not None:
                announcer.stop()
            supervised.clear(redis)
