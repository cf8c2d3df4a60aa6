"""Recordings in kube-scheduler-simulator's format, read and replayed into the simulated
cluster: a hand-written file (per the simulator's docs: Add, Update, Delete of nodes and
pods), the pace, --reschedule, and the clear errors a bad file gets."""
import gzip
import subprocess
import sys

import orjson
import pytest
from kubernetes import client

from simcluster import SimCluster
from simcluster.generate import make_node, make_pod
from simcluster.recording import (
    RecordingError,
    RecordingWriter,
    check_recording,
    read_recording,
    record_line,
)
from simcluster.replay import Replay
from tests.waiting import wait_for

T0 = 1_790_000_000.0


def line(seconds, event, resource) -> bytes:
    return record_line(T0 + seconds, event, resource)


def hand_written() -> list[bytes]:
    """A node added, two pods bound to it, one relabelled, one deleted, a second node
    added then deleted; a namespace and a priority class the replay skips."""
    node = make_node("node-a", zone="zone-a")
    other = make_node("node-b", zone="zone-b")
    web = make_pod("web-1", namespace="shop", node_name="node-a")
    db = make_pod("db-1", namespace="shop", node_name="node-a")
    relabelled = {**web, "metadata": {**web["metadata"], "labels": {"tier": "front"}}}
    return [line(0, "Add", {"apiVersion": "v1", "kind": "Namespace",
                            "metadata": {"name": "shop"}}),
            line(0, "Add", {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                            "metadata": {"name": "high"}, "value": 1000}),
            line(0, "Add", node), line(0.5, "Add", other), line(1, "Add", web),
            line(1, "Add", db), line(2, "Update", relabelled), line(3, "Delete", db),
            line(4, "Delete", other)]


@pytest.fixture
def written(tmp_path):
    path = tmp_path / "trace.jsonl"
    path.write_bytes(b"".join(hand_written()))
    return path


def test_a_hand_written_recording_replays_add_update_delete(written):
    with SimCluster(replay=written, replay_speed=0, kubelet=False) as sim:
        assert sim.replay.wait(10)
        assert [n["metadata"]["name"] for n in sim.nodes()] == ["node-a"]
        pods = sim.pods()
        assert [(p["metadata"]["name"], p["spec"]["nodeName"], p["metadata"]["labels"])
                for p in pods] == [("web-1", "node-a", {"tier": "front"})]
        state = sim.state()["replay"]
        assert (state["events"], state["played"], state["missing"], state["skipped"]) == \
            (9, 9, 0, {"Namespace": 1, "PriorityClass": 1})
        assert state["recorded_at"] == T0 + 4
        # what a client watching it sees: the objects as the API server serves them
        v1 = client.CoreV1Api(sim.api_client())
        assert v1.read_namespaced_pod("web-1", "shop").spec.node_name == "node-a"


def test_reschedule_leaves_the_recorded_pods_pending_until_bound_here(tmp_path):
    lines = hand_written()
    first, then = tmp_path / "first.jsonl", tmp_path / "then.jsonl"
    first.write_bytes(b"".join(lines[:5]))
    then.write_bytes(b"".join(lines[5:7]))
    with SimCluster(replay=first, replay_speed=0, reschedule=True, kubelet=False) as sim:
        assert sim.replay.wait(10)
        pod = sim.pod("shop", "web-1")
        assert "nodeName" not in pod["spec"] and pod["status"]["phase"] == "Pending"
        assert set(pod["status"]) <= {"phase", "qosClass"}
        sim.api.bind("shop", "web-1", {"target": {"kind": "Node", "name": "node-b"}})
        # later records of the pod keep the node this cluster bound it to
        Replay(sim.api, then, speed=0, reschedule=True).run()
        pod = sim.pod("shop", "web-1")
        assert (pod["spec"]["nodeName"], pod["metadata"]["labels"]) == ("node-b",
                                                                        {"tier": "front"})
        assert "nodeName" not in sim.pod("shop", "db-1")["spec"]


def test_records_are_played_at_the_recorded_pace_times_the_speed(written):
    now = [100.0]
    waits = []
    # the replay's clock moves only when it waits
    with SimCluster(kubelet=False, nodes=0, pods=0) as sim:
        replay = Replay(sim.api, written, speed=2, clock=lambda: now[0])

        def wait(seconds):
            waits.append(seconds)
            now[0] += seconds
            return False
        replay._stop.wait = wait
        replay.run()
    # recorded at 0, 0.5, 1, 2, 3, 4 s: half those gaps at speed 2
    assert waits == [0.25, 0.25, 0.5, 0.5, 0.5]
    assert replay.done


def test_a_gzipped_recording_reads_as_the_plain_one(tmp_path, written):
    writer = RecordingWriter(tmp_path / "trace.jsonl.gz")
    for data in hand_written():
        writer.write(data)
    assert not (tmp_path / "trace.jsonl.gz").exists()   # complete only once closed
    path = writer.close()
    assert not writer.partial.exists()
    assert read_recording(path) == read_recording(written)


def test_the_delete_line_keeps_only_the_identity_as_the_simulators_recorder_does():
    pod = make_pod("web-1", namespace="shop", node_name="node-a")
    doc = orjson.loads(record_line(T0, "Delete", pod))
    assert list(doc) == ["time", "event", "resource"]
    assert doc["resource"] == {"apiVersion": "v1", "kind": "Pod",
                               "metadata": {"name": "web-1", "namespace": "shop"}}
    assert doc["time"].endswith("Z") and doc["time"].startswith("2026-09-21T")


@pytest.mark.parametrize("bad, line_no, says", [
    (b'{"time": "2026-11-26T10:00:00Z", "event": "Add", "resource": {"kind": "No', 4,
     r"not JSON \(unexpected end of data at column 74\)"),
    (b'[1, 2]', 4, "not a JSON object"),
    (b'{"time": "yesterday", "event": "Add", "resource": {}}', 4, "RFC 3339"),
    (b'{"time": "2026-11-26T10:00:00Z", "event": "Patch", "resource": {}}', 4,
     "one of Add, Update, Delete"),
    (b'{"time": "2026-11-26T10:00:00Z", "event": "Add", "resource": {"metadata": {}}}', 4,
     "no kind"),
    (b'{"time": "2026-11-26T10:00:00Z", "event": "Add", "resource": {"kind": "Pod", '
     b'"metadata": {"name": "x"}}}', 4, "no metadata.namespace"),
], ids=["truncated", "not-object", "time", "event", "kind", "namespace"])
def test_a_bad_line_is_an_error_naming_it(tmp_path, bad, line_no, says):
    good = hand_written()     # whole lines; a blank line 2 is skipped but counted
    path = tmp_path / "bad.jsonl"
    path.write_bytes(good[0] + b"\n" + good[1] + bad + b"\n" + good[2])
    with pytest.raises(RecordingError, match=f"line {line_no}: .*{says}") as caught:
        read_recording(path)
    assert caught.value.line == line_no


def test_a_cut_gzip_file_is_an_error_naming_where_it_ends(tmp_path):
    whole = gzip.compress(b"".join(hand_written() * 50))
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(whole[:len(whole) // 2])
    with pytest.raises(RecordingError, match=r"line \d+: the file ends in the middle"):
        read_recording(path)


def test_a_nanosecond_time_with_an_offset_reads_as_go_writes_it(tmp_path):
    path = tmp_path / "go.jsonl"
    node = make_node("node-a", zone="zone-a")
    path.write_bytes(b'{"time":"2026-11-26T10:00:00.123456789+09:00","event":"Add",'
                     b'"resource":' + orjson.dumps(node) + b"}\n")
    (record,) = read_recording(path)
    assert record.at == pytest.approx(1_795_654_800.123456)


def test_the_server_refuses_a_bad_recording_before_serving(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"".join(hand_written()[:3]) + b'{"time": "2026-11-26T10')
    done = subprocess.run([sys.executable, "-m", "simcluster", "serve", "--replay", str(path),
                           "--speed", "0"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert "line 4: not JSON" in done.stderr


def test_a_replay_serves_its_position_on_the_state_endpoint(written):
    with SimCluster(replay=written, replay_speed=0, kubelet=False) as sim:
        state = wait_for(lambda: sim.control("GET", "state", {})[1]["replay"]["finished_at"]
                         and sim.control("GET", "state", {})[1]["replay"],
                         10, "the replay's end")
        assert (state["source"], state["played"], state["speed"]) == ("trace.jsonl", 9, 0.0)


def test_a_file_changed_after_its_check_stops_the_replay_saying_why(tmp_path, written):
    with SimCluster(kubelet=False, nodes=0, pods=0) as sim:
        replay = Replay(sim.api, written, speed=0)
        written.write_bytes(b"".join(hand_written()[:4]) + b"{not json\n")
        replay.run()
        assert (replay.played, replay.done, replay.finished_at) == (4, False, None)
        assert "line 5: not JSON" in replay.state()["error"]


def test_check_recording_counts_without_keeping(written):
    summary = check_recording(written)
    assert (summary.events, summary.first_at, summary.last_at) == (9, T0, T0 + 4)
