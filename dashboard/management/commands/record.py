"""`manage.py record --out FILE`: record the cluster the owner watches (SCHEDVIEW_KUBECONFIG,
or the pod's service account in a cluster), real or simulated, for `manage.py up --replay`
or kube-scheduler-simulator's replayer: JSON lines of {"time", "event", "resource"}
(dashboard/kube/recorder.py), gzip-compressed when FILE ends in .gz.

Ctrl-C (or SIGTERM) stops it: the lines are written to FILE.partial as they come and the
file takes its name only once closed, so FILE is always a complete recording.
"""
import signal
import threading
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from kubernetes.config import ConfigException

from simcluster.recording import RecordingWriter

from dashboard.kube import client as kube
from dashboard.kube.recorder import ClusterRecorder


class Command(BaseCommand):
    help = ("Record the cluster's nodes, pods and priority classes (a listing, then every "
            "watch event) as kube-scheduler-simulator's recorder writes them, until Ctrl-C.")

    def add_arguments(self, parser):
        parser.add_argument("--out", required=True, type=Path,
                            help="the recording (.gz: gzip-compressed); replaced if it exists")

    def handle(self, *args, out: Path, **options):
        try:
            api = kube.core_api()
        except (OSError, ConfigException) as error:
            raise CommandError(f"no cluster to record: {error}") from None
        try:
            writer = RecordingWriter(out)
        except OSError as error:
            raise CommandError(f"--out: {error}") from None
        stop = threading.Event()
        before = {sig: signal.signal(sig, lambda *_: stop.set())
                  for sig in (signal.SIGINT, signal.SIGTERM)}
        recorder = ClusterRecorder(api, writer, stop)
        self.stdout.write(f"recording to {out} (Ctrl-C stops)")
        try:
            recorder.run()
        except Exception as error:
            if not writer.lines:
                writer.discard()
                raise CommandError(f"nothing recorded: {error}") from error
            raise CommandError(f"recording stopped by an error, {writer.partial} holds what "
                               f"was recorded: {error}") from error
        finally:
            for sig, handler in before.items():
                signal.signal(sig, handler)
        writer.close()
        counts = ", ".join(f"{n} {event}" for event, n in recorder.counts.items())
        self.stdout.write(f"recorded {recorder.events} events ({counts}) to {out}")
