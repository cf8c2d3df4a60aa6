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

import pytest
import requests

BASE_DIR = Path(__file__).resolve().parents[2]


def up(var_dir: Path, port: int) -> subprocess.Popen:
    """`manage.py up` with no REDIS_URL, DATABASE_URL or kubeconfig: everything embedded
    under var_dir, a small simulated cluster included."""
    env = {name: value for name, value in os.environ.items()
           if name not in ("REDIS_URL", "DATABASE_URL", "SCHEDVIEW_KUBECONFIG")}
    env["SCHEDVIEW_VAR_DIR"] = str(var_dir)
    return subprocess.Popen([sys.executable, "manage.py", "up", "--port", str(port),
                             "--nodes", "8", "--pods", "60", "--churn", "5"],
                            cwd=BASE_DIR, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


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
    deadline = time.monotonic() + timeout
    while True:
        html = session.get(url).text
        if text in html:
            return html
        if time.monotonic() > deadline:
            pytest.fail(f"{url} never showed {text!r}:\n{html[-2000:]}")
        time.sleep(0.2)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


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
        page_showing(logged_in(base, started), f"{base}/nodes/", "node-zone-a-00000")
        with urlopen(f"http://127.0.0.1:{port}/static/schedview.css") as response:
            assert response.status == 200
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)
        reader.join(timeout=30)
        rest = "".join(output)
    finally:
        process.kill()
    assert process.returncode == 0, rest
    assert "schedview: stopped" in rest
    assert not (tmp_path / "redis.sock").exists()  # redis-server removes it when it shuts down
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port)).close()


def test_up_fails_naming_the_child_that_died(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        process = up(tmp_path, taken.getsockname()[1])
        output, _ = process.communicate(timeout=60)
    assert process.returncode == 1, output
    assert "CommandError: web exited with code" in output
    assert not (tmp_path / "redis.sock").exists()  # the embedded Redis was stopped too
