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
        if not out.parent.is_dir():
            raise CommandError(f"--out: no directory {out.parent}")
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        writer = RecordingWriter(out)
        recorder = ClusterRecorder(kube.core_api(), writer, stop)
        self.stdout.write(f"recording to {out} (Ctrl-C stops)")
        try:
            recorder.run()
        except Exception as error:
            raise CommandError(f"recording stopped by an error, {writer.partial} holds what "
                               f"was recorded: {error}") from error
        writer.close()
        counts = ", ".join(f"{n} {event}" for event, n in recorder.counts.items())
        self.stdout.write(f"recorded {recorder.events} events ({counts}) to {out}")
