"""What the processes other than the web load when they set Django up: no web server."""
from tests.children import fresh_interpreter

# Each process's entry, as `up` starts it: the commands, and Celery's app with its tasks.
ENTRIES = ("dashboard.management.commands.watch", "dashboard.management.commands.standin",
           "dashboard.management.commands.pools", "dashboard.management.commands.up",
           "dashboard.celery", "dashboard.worker.tasks")


def test_the_processes_other_than_the_web_load_no_twisted():
    """In a fresh interpreter: this one has loaded the web for other tests."""
    probe = ("import os, sys, importlib, django; "
             "os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'dashboard.settings'); "
             f"django.setup(); [importlib.import_module(m) for m in {ENTRIES!r}]; "
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('twisted', 'daphne')))")
    out = fresh_interpreter(probe)
    assert out.strip() == "[]", out[:300]
