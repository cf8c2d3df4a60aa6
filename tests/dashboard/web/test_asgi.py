"""The web process's collector, as daphne loads dashboard.asgi."""
import subprocess
import sys
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parents[3]


def test_the_web_moves_what_it_loaded_out_of_the_collectors_way():
    """In a fresh interpreter, as daphne starts: not in this one, whose heap is the tests'."""
    probe = ("import gc, dashboard.asgi; "
             "print(gc.get_freeze_count(), *gc.get_threshold())")
    out = subprocess.run([sys.executable, "-c", probe], cwd=BASE_DIR, capture_output=True,
                         text=True, timeout=120, check=True).stdout.split()
    frozen, young, *_ = map(int, out)
    assert frozen > 10_000      # Django and the app, loaded before the first request
    assert young == 50_000
