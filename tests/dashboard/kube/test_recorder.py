"""Recording a cluster (dashboard/kube/recorder.py, `manage.py record`) and replaying the
recording into a fresh simulated cluster (simcluster/replay.py): the round trip leaves the
cache as the original's, and record stops on SIGINT with a complete file."""
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from schedcache import Cache
from simcluster import SimCluster
from simcluster.generate import generate_cluster
from simcluster.kubeconfig import write_kubeconfig
from simcluster.recording import RecordingWriter, read_recording

from dashboard.kube.recorder import ClusterRecorder
from dashboard.owner.decoder import DecodedList, DecodedPage, digest_pod
from dashboard.owner.owner import CacheOwner
from tests.children import spawn, stop
from tests.dashboard.feedhelpers import core_api_at
from tests.waiting import wait_for

ROOT = Path(__file__).resolve().parents[3]


def cache_of(sim: SimCluster) -> dict:
    """The cluster as the owner's cache holds it after a list: each node's pods and
    aggregates, and the pending pods."""
    owner = CacheOwner(Cache(ttl=30))
    for item in (DecodedPage("nodes", sim.nodes(), True), DecodedList("nodes", "1"),
                 DecodedPage("pods", [digest_pod(p) for p in sim.pods()], True),
                 DecodedList("pods", "1")):
        owner.apply(item)
    infos = owner.cache.get_node_name_to_info_map()
    return {"nodes": {name: (sorted(p.pod["metadata"]["name"] for p in info.pods),
                             info.aggregates()) for name, info in infos.items()},
            "pending": sorted(p["metadata"]["name"] for p in owner.pending.values())}


def state_of(sim: SimCluster, kind: str) -> dict:
    objs = sim.pods() if kind == "pods" else sim.nodes()
    return {(f"{o['metadata']['namespace']}/" if kind == "pods" else "") + o["metadata"]["name"]:
            o["metadata"]["resourceVersion"] for o in objs}


@pytest.mark.slow
def test_a_recording_replayed_at_speed_0_leaves_the_cache_as_the_original(tmp_path):
    cluster = generate_cluster(nodes=8, pods=120, zones=2, seed=5, pending_fraction=0.1,
                               namespaces=3)
    path = tmp_path / "trace.jsonl.gz"
    # No periodic bookmarks: one reaching the nodes' watch between the compaction and the
    # drop would carry a version past the compaction, and the nodes would resume, not relist.
    with SimCluster(cluster=cluster, namespaces=3, churn=150, scheduler=True,
                    bookmark_interval=3600) as original:
        original.kubelet.update(start_delay=0.0, grace_cap=0.2)
        writer = RecordingWriter(path)
        halt = threading.Event()
        recorder = ClusterRecorder(core_api_at(original.url), writer, halt, page_size=50,
                                   watch_timeout=60)
        thread = threading.Thread(target=recorder.run)
        thread.start()
        try:
            wait_for(lambda: recorder.events > 500, 60, "500 recorded events")
            # history gone: the nodes' watch resumes from a compacted version (410) and
            # relists, the pods' is made to; the recorder writes what changed in between
            # as Adds, Updates and Deletes
            original.compact()
            original.drop_watches()
            recorder.reflectors[0].request_relist()
            wait_for(lambda: all(r.stats["lists"] > 1 for r in recorder.reflectors), 60,
                     "relists")
            assert recorder.reflectors[1].stats["expired"]
            wait_for(lambda: recorder.events > 1000, 60, "1000 recorded events")
            original.churn.update(rate=0)
            original.kubelet.update(auto=False)
            wait_for(lambda: all(recorder.seen(kind) == state_of(original, kind)
                                 for kind in ("pods", "nodes")), 60,
                     "the recording to catch up with the cluster")
        finally:
            halt.set()
            thread.join(30)
        writer.close()
        expected = cache_of(original)
    records = read_recording(path)
    assert {r.event for r in records} == {"Add", "Update", "Delete"}
    assert len(records) == recorder.events
    with SimCluster(replay=path, replay_speed=0, kubelet=False) as replayed:
        assert replayed.replay.wait(60)
        assert replayed.replay.missing == 0
        assert cache_of(replayed) == expected
    assert expected["pending"] and sum(len(pods) for pods, _ in expected["nodes"].values())


@pytest.mark.slow
def test_record_stops_on_sigint_with_a_complete_file(tmp_path):
    cluster = generate_cluster(nodes=4, pods=40, zones=2, seed=3, namespaces=2)
    out = tmp_path / "trace.jsonl.gz"
    with SimCluster(cluster=cluster, namespaces=2, churn=50, scheduler=True) as sim:
        kubeconfig = sim.write_kubeconfig(tmp_path / "kubeconfig")
        env = dict(os.environ, SCHEDVIEW_KUBECONFIG=str(kubeconfig), PYTHONUNBUFFERED="1")
        process = spawn([sys.executable, "manage.py", "record", "--out", str(out)], cwd=ROOT,
                        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            partial = out.with_name(out.name + ".partial")
            # the listing, then churn: the partial file grows past a flush or two
            wait_for(lambda: partial.exists() and partial.stat().st_size > 20_000, 60,
                     "lines flushed to the partial file")
            changed = sim.churn.counts["label"] + sim.churn.counts["delete"]
            wait_for(lambda: sim.churn.counts["label"] + sim.churn.counts["delete"]
                     > changed + 5, 60, "pods changed after the listing")
            size = partial.stat().st_size
            wait_for(lambda: partial.stat().st_size > size, 60, "a flush after those")
            assert not out.exists()
            process.send_signal(signal.SIGINT)
            assert process.wait(timeout=30) == 0
        finally:
            stop(process)
        said = process.stdout.read().decode()
    assert not partial.exists()
    records = read_recording(out)       # whole, every line
    assert f"recorded {len(records)} events" in said
    # the listing first (an Add per object: 4 nodes, 40 pods or more by then), then events
    listing = next(i for i, r in enumerate(records) if r.event != "Add")
    kinds = [r.kind for r in records[:listing]]
    assert kinds.count("Node") == 4 and kinds.count("Pod") >= 40
    assert "Node" not in [r.kind for r in records[listing:]]


def unreachable_kubeconfig(tmp_path) -> Path:
    with socket.socket() as probe:      # a port nothing listens on once closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return Path(write_kubeconfig(tmp_path / "kubeconfig", f"http://127.0.0.1:{port}"))


@pytest.mark.parametrize("case, says", [
    ("no directory", "--out: .*No such file or directory"),
    ("no kubeconfig", "no cluster to record"),
    ("no server", "nothing recorded"),
])
def test_record_refuses_what_it_cannot_do_and_leaves_no_file(tmp_path, settings, case, says):
    out = tmp_path / ("missing/trace.jsonl" if case == "no directory" else "trace.jsonl")
    settings.SCHEDVIEW_KUBECONFIG = (tmp_path / "absent" if case == "no kubeconfig"
                                     else unreachable_kubeconfig(tmp_path))
    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    with pytest.raises(CommandError, match=says):
        call_command("record", "--out", str(out))
    assert not out.exists() and not out.with_name("trace.jsonl.partial").exists()
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == handlers
