"""`manage.py up --replay`: the simulated cluster plays a recording (the sample shipped in
simcluster/samples/) and the overview says where it is; a bad recording starts nothing."""
import os
import signal
import subprocess
import sys

import pytest
from django.core.management import CommandError, call_command
from kubernetes import client, config

from simcluster.recording import read_recording
from tests.children import spawn, stop
from tests.waiting import wait_for
from tests.dashboard.launcher.test_up_command import (
    BASE_DIR,
    drain,
    free_port,
    logged_in,
    page_showing,
    read_until,
)

SAMPLE = BASE_DIR / "simcluster" / "samples" / "demo-cluster.jsonl.gz"


@pytest.mark.parametrize("content, says", [
    (b'{"time": "2026-11-26T10:00:00Z", "event": "Add", "resource": {"kind"', "line 1: not JSON"),
    (b'\n{"time": "2026-11-26T10:00:00Z", "event": "Bind", "resource": {}}\n',
     "line 2: event 'Bind' is not one of Add, Update, Delete"),
], ids=["truncated", "unknown event"])
def test_a_bad_recording_is_refused_naming_its_line_before_anything_starts(tmp_path, content,
                                                                           says):
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(content)
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(CommandError, match=f"--replay: .*bad.jsonl: {says}"):
        call_command("up", "--replay", str(bad))
    assert signal.getsignal(signal.SIGTERM) is before      # up went no further


def test_the_sample_recording_is_small_and_whole():
    records = read_recording(SAMPLE)
    assert SAMPLE.stat().st_size < 400_000
    kinds = {r.kind for r in records}
    assert {"Node", "Pod"} <= kinds and {r.event for r in records} == {"Add", "Update", "Delete"}
    assert records[-1].at - records[0].at > 120        # a few minutes of the cluster


@pytest.mark.live
@pytest.mark.timeout(300)
def test_up_replays_the_sample_and_the_overview_says_so_and_reschedule_binds_anew(tmp_path):
    # --reschedule: the recorded pods arrive unbound, and the stand-in binds them through
    # the owners' extender
    port = free_port()
    env = {name: value for name, value in os.environ.items()
           if name not in ("REDIS_URL", "DATABASE_URL", "SCHEDVIEW_KUBECONFIG")}
    env.update(SCHEDVIEW_VAR_DIR=str(tmp_path),
               SCHEDVIEW_EXTENDER_ADDRESS=f"127.0.0.1:{free_port()}")
    process = spawn([sys.executable, "manage.py", "up", "--port", str(port), "--replay",
                     str(SAMPLE), "--speed", "0", "--reschedule"], cwd=BASE_DIR, env=env,
                    text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        started = read_until(process, f"Listening on TCP address 127.0.0.1:{port}",
                             "schedview: http", f"events of {SAMPLE}")
        drain(process)
        base = f"http://127.0.0.1:{port}"
        session = logged_in(base, started)
        records = read_recording(SAMPLE)
        overview = page_showing(session, f"{base}/", f"All {len(records):,} events of",
                                timeout=120)
        assert "Its pods are left pending: the stand-in schedules them" in overview
        last_node = next(r for r in reversed(records) if r.kind == "Node")
        page_showing(session, f"{base}/nodes/", last_node.resource["metadata"]["name"])
        cluster = client.CoreV1Api(config.new_client_from_config(
            config_file=str(tmp_path / "simcluster.kubeconfig")))

        def bound_here():
            # the replay cleared every recorded binding: a pod with a node was bound here
            pods = [p for p in cluster.list_pod_for_all_namespaces().items
                    if p.status.phase == "Pending"]
            return sum(bool(p.spec.node_name) for p in pods) >= 10
        wait_for(bound_here, 150, "the stand-in to bind replayed pods")
    finally:
        stop(process)
