"""The web process's collector, as daphne loads dashboard.asgi."""
from tests.children import fresh_interpreter


def test_the_web_moves_what_it_loaded_out_of_the_collectors_way():
    """In a fresh interpreter, as daphne starts: not in this one, whose heap is the tests'."""
    probe = ("import gc, dashboard.asgi; "
             "print(gc.get_freeze_count(), *gc.get_threshold())")
    out = fresh_interpreter(probe).split()
    frozen, young, *_ = map(int, out)
    assert frozen > 10_000      # Django and the app, loaded before the first request
    assert young == 50_000
