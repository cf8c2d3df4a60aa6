"""`manage.py up` end to end, on the embedded default in a temporary var dir."""
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.request import urlopen

import orjson
import psutil
import pytest
import redis
import requests

from dashboard.management.commands.up import OTHER_MACHINES_NICE
from tests.children import spawn
from tests.dashboard.runtime.processes import alive, descendants
from tests.waiting import wait_for

pytestmark = pytest.mark.live

BASE_DIR = Path(__file__).resolve().parents[3]


def up(var_dir: Path, port: int, extender_port: int = 0, **settings) -> subprocess.Popen:
    """`manage.py up` with no REDIS_URL, DATABASE_URL or kubeconfig: everything embedded
    under var_dir, a small simulated cluster included; the owners' extender listener on
    `extender_port` (0: none); SCHEDVIEW_* settings by keyword."""
    env = {name: value for name, value in os.environ.items()
           if name not in ("REDIS_URL", "DATABASE_URL", "SCHEDVIEW_KUBECONFIG")}
    env.update({f"SCHEDVIEW_{name.upper()}": str(value) for name, value in settings.items()})
    env["SCHEDVIEW_VAR_DIR"] = str(var_dir)
    env["SCHEDVIEW_EXTENDER_ADDRESS"] = f"127.0.0.1:{extender_port}" if extender_port else ""
    # filter_answers asks about a pod the cluster lacks: refused at once, not after a wait
    env["SCHEDVIEW_EXTENDER_UNSEEN_WAIT"] = "0"
    return spawn([sys.executable, "manage.py", "up", "--port", str(port),
                             "--nodes", "8", "--pods", "60", "--churn", "5"],
                            cwd=BASE_DIR, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def test_children_get_the_stand_in_period_without_it_entering_our_environment(monkeypatch):
    from dashboard.management.commands.up import children_env

    monkeypatch.delenv("SCHEDVIEW_SCHEDULE_PERIOD", raising=False)
    assert children_env(simulated=True)["SCHEDVIEW_SCHEDULE_PERIOD"] == "1"
    assert "SCHEDVIEW_SCHEDULE_PERIOD" not in children_env(simulated=False)
    assert "SCHEDVIEW_SCHEDULE_PERIOD" not in os.environ
    monkeypatch.setenv("SCHEDVIEW_SCHEDULE_PERIOD", "5")
    assert children_env(simulated=True)["SCHEDVIEW_SCHEDULE_PERIOD"] == "5"


def test_children_get_two_malloc_arenas_unless_the_operator_set_them(monkeypatch):
    from dashboard.management.commands.up import children_env

    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    assert children_env(simulated=True)["MALLOC_ARENA_MAX"] == "2"
    assert children_env(simulated=False)["MALLOC_ARENA_MAX"] == "2"
    assert "MALLOC_ARENA_MAX" not in os.environ
    monkeypatch.setenv("MALLOC_ARENA_MAX", "8")
    assert children_env(simulated=True)["MALLOC_ARENA_MAX"] == "8"


def read_until(process: subprocess.Popen, *texts: str) -> str:
    """The output up to the line where every one of `texts` has shown; fails if the
    process ends first."""
    seen, missing = [], set(texts)
    for line in process.stdout:
        seen.append(line)
        missing = {text for text in missing if text not in line}
        if not missing:
            return "".join(seen)
    pytest.fail(f"{missing!r} never printed:\n{''.join(seen)}")


def logged_in(base: str, output: str) -> requests.Session:
    """A browser session logged in with the operator account `up` printed."""
    password = re.search(r"log in as operator, password (\S+)", output).group(1)
    session = requests.Session()
    session.get(f"{base}/accounts/login/").raise_for_status()
    response = session.post(f"{base}/accounts/login/", data={
        "username": "operator", "password": password,
        "csrfmiddlewaretoken": session.cookies["csrftoken"]}, allow_redirects=False)
    assert response.status_code == 302, response.text
    return session


def drain(process: subprocess.Popen):
    """Keep reading the children's output, so that a full pipe never blocks them.
    Returns the reader (it ends when every writer has exited) and the lines."""
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(process.stdout), daemon=True)
    reader.start()
    return reader, lines


def page_showing(session: requests.Session, url: str, text: str, timeout: float = 90.0) -> str:
    """Poll a page until the owner's rows put `text` on it."""
    def html():
        page = session.get(url).text
        return page if text in page else ""
    return wait_for(html, timeout, f"{url} to show {text!r}", interval=0.2)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def niceness_by_command(pid: int) -> dict[str, set[int]]:
    """The niceness of the processes below `pid`, by the words of their command lines."""
    found = {}
    for child in descendants(pid):
        try:
            words = (Path("/proc") / str(child) / "cmdline").read_bytes().split(b"\0")
            nice = os.getpriority(os.PRIO_PROCESS, child)
        except OSError:
            continue
        for word in words:
            found.setdefault(word.decode(), set()).add(nice)
    return found


def test_up_serves_the_dashboard_and_ctrl_c_stops_everything(tmp_path):
    port = free_port()
    process = up(tmp_path, port)
    try:
        base = f"http://127.0.0.1:{port}"
        started = read_until(process, f"Listening on TCP address 127.0.0.1:{port}",
                             "schedview: http")
        reader, output = drain(process)
        assert (tmp_path / "redis.sock").exists()
        # The simulated cluster's nodes reach the page through the owner's read model.
        session = logged_in(base, started)
        page_showing(session, f"{base}/nodes/", "node-zone-a-00000")
        # The owners', pools' and worker's metrics are served on loopback ports the
        # overview links to; the simulated cluster's fault episodes are announced there.
        overview = page_showing(session, f"{base}/", "Injected faults")
        probes = dict(re.findall(r'<th scope="row">([\w-]+)</th><td class="num">\d+</td>'
                                 r'<td class="num">\d+</td>\s*<td><a href="'
                                 r'(http://127\.0\.0\.1:\d+)/metrics">', overview))
        assert set(probes) == {"owner-a", "owner-b", "pools", "worker"}, overview
        leading = wait_for(lambda: next((name for name in ("owner-a", "owner-b")
                                         if "schedview_cache_pods" in requests.get(
                                             f"{probes[name]}/metrics").text), None),
                           60, "the leading owner's metrics")
        assert leading and "schedview_pool_claims" in requests.get(f"{probes['pools']}/metrics").text
        assert requests.get(f"{probes['worker']}/healthz").status_code == 200
        with urlopen(f"http://127.0.0.1:{port}/static/schedview.css") as response:
            assert response.status == 200
        # The simulated API server yields the cores to the dashboard's own processes.
        niceness = niceness_by_command(process.pid)
        ours = os.getpriority(os.PRIO_PROCESS, 0)
        assert niceness["simcluster"] == {min(ours + OTHER_MACHINES_NICE, 19)}, niceness
        assert niceness["daphne"] == niceness["watch"] == {ours}, niceness
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:   # say where it stopped: its last words
            raise AssertionError("up did not stop within 60 s of Ctrl-C; it last said:\n"
                                 + "".join(output)[-3000:]) from None
        reader.join(timeout=30)
        rest = "".join(output)
    finally:
        process.kill()
    assert process.returncode == 0, rest
    assert "schedview: stopped" in rest
    assert not (tmp_path / "redis.sock").exists()  # redis-server removes it when it shuts down
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port)).close()


@pytest.mark.timeout(200)
def test_up_fails_naming_the_child_that_died(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        process = up(tmp_path, taken.getsockname()[1])
        output, _ = process.communicate(timeout=150)
    assert process.returncode == 1, output
    assert re.search(r"CommandError: web exited with code \d+ 5 times in a row", output), output
    assert not (tmp_path / "redis.sock").exists()  # the embedded Redis was stopped too


# kube-scheduler's first filter call of the "fits" scenario (k8s-wire/extender/
# 01-fits-01-filter.request.txt), asking about one of the simulated cluster's nodes.
CAPTURED_FILTER = (Path("/work/shared/k8s-wire/extender/01-fits-01-filter.request.txt"))


def filter_answers(address: str) -> bool:
    body = orjson.loads(CAPTURED_FILTER.read_text().split("\n\n", 1)[1])
    body["NodeNames"] = ["node-zone-a-00000"]
    try:
        response = requests.post(f"http://{address}/extender/filter", json=body, timeout=2)
    except (requests.ConnectionError, requests.Timeout):   # not yet: asked again until the wait ends
        return False
    # The captured pod is not in this cluster: the extender answers that it refuses it (a
    # pod the owner's watch never showed), which takes a leading owner's cache to say.
    return (response.status_code == 400
            and "has seen from the API server" in response.json()["Error"])


@pytest.mark.timeout(300)
def test_up_restarts_a_killed_owner_and_the_standby_takes_over_and_nothing_outlives_it(tmp_path):
    port, extender = free_port(), f"127.0.0.1:{free_port()}"
    # A 5 s lease (client-go's default is 15 s), so that the handover is quick.
    process = up(tmp_path, port, int(extender.rpartition(":")[2]), lease_duration=5,
                 lease_renew_deadline=4, lease_retry_period=1)
    everything = set()
    try:
        started = read_until(process, "schedview: http")
        reader, output = drain(process)
        store = redis.Redis(unix_socket_path=str(tmp_path / "redis.sock"))

        def children():
            return {child["name"]: child
                    for child in orjson.loads(store.get("schedview:supervisor:children"))}

        def leader():
            token = store.get("schedview:owner:leader")
            return token and token.decode().rpartition(":")[0]

        # One owner leads for longer than a lease (5 s) with its extender answering: the
        # other is then standing by, not still racing for the lease.
        seen = {"holder": None, "since": 0.0}

        def settled_leader():
            holder = leader()
            if holder != seen["holder"]:
                seen.update(holder=holder, since=time.monotonic())
            steady = holder and time.monotonic() - seen["since"] > 6
            return holder if steady and filter_answers(extender) else None

        first = wait_for(settled_leader, 120, "one owner leads, steadily, its extender answering")
        killed = children()[first]["pid"]
        # Frozen first (issue 22): the extender's socket is `up`'s, handed to both owners,
        # so the frozen leader holds no port and the standby's extender answers meanwhile.
        os.kill(killed, signal.SIGSTOP)
        standby = {"owner-a": "owner-b", "owner-b": "owner-a"}[first]
        try:
            wait_for(lambda: leader() == standby, 10, "the standby leads")
            # What matters is that it answers while the old leader is still frozen; how
            # soon (a decoder forked, a list, a sync) depends on the machine's load.
            wait_for(lambda: filter_answers(extender), 30,
                     "the standby's extender answers while the old leader is frozen")
            assert psutil.Process(killed).status() == psutil.STATUS_STOPPED
        finally:
            os.kill(killed, signal.SIGKILL)    # killed still frozen: the supervisor restarts it
        back = wait_for(lambda: (lambda c: c["restarts"] == 1 and alive(c["pid"]) and c)(
            children()[first]), 30, "the killed owner is started again")
        assert back["pid"] != killed and back["last_exit"] == -signal.SIGKILL
        assert f"{first} exited with code -9; restarting it" in "".join(output)
        session = logged_in(f"http://127.0.0.1:{port}", started)
        overview = session.get(f"http://127.0.0.1:{port}/").text
        # The handover is an event of the history, the new leader's first.
        page_showing(session, f"http://127.0.0.1:{port}/events/?kind=owner_leading",
                     f"<td>{standby}</td>", timeout=30)
        assert f"Leading: <strong>{standby}</strong>" in overview
        assert re.search(rf'<th scope="row">{first}</th><td class="num">{back["pid"]}</td>'
                         rf'<td class="num">1</td>', overview)

        # However the supervisor ends, its children end with it: here, SIGKILL.
        everything = descendants(process.pid)
        assert len(everything) >= 8
        process.kill()
        process.wait(10)
        wait_for(lambda: not any(alive(pid) for pid in everything), 30,
             "every process under the SIGKILLed supervisor gone")
    finally:
        process.kill()
        for pid in everything:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
