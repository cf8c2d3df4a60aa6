"""`manage.py up` end to end, on the embedded default in a temporary var dir."""
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from urllib.request import urlopen

import pytest

BASE_DIR = Path(__file__).resolve().parents[2]


def up(var_dir: Path, port: int) -> subprocess.Popen:
    """`manage.py up` with no REDIS_URL or DATABASE_URL: everything embedded under var_dir."""
    env = {name: value for name, value in os.environ.items()
           if name not in ("REDIS_URL", "DATABASE_URL")}
    env["SCHEDVIEW_VAR_DIR"] = str(var_dir)
    return subprocess.Popen([sys.executable, "manage.py", "up", "--port", str(port)],
                            cwd=BASE_DIR, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def read_until(process: subprocess.Popen, text: str) -> str:
    """The output up to the first line holding `text`; fails if the process ends first."""
    seen = []
    for line in process.stdout:
        seen.append(line)
        if text in line:
            return "".join(seen)
    pytest.fail(f"{text!r} never printed:\n{''.join(seen)}")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_up_serves_the_dashboard_and_ctrl_c_stops_everything(tmp_path):
    port = free_port()
    process = up(tmp_path, port)
    try:
        read_until(process, f"Listening on TCP address 127.0.0.1:{port}")
        assert (tmp_path / "redis.sock").exists()
        with urlopen(f"http://127.0.0.1:{port}/nodes/") as response:
            assert "node-zone-a-00000" in response.read().decode()
        with urlopen(f"http://127.0.0.1:{port}/static/schedview.css") as response:
            assert response.status == 200
        process.send_signal(signal.SIGINT)
        rest, _ = process.communicate(timeout=30)
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
