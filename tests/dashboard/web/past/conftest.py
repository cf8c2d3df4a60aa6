"""The past pages' tests read back the moments of a scripted history
(tests/dashboard/readmodel/scripted_run.py)."""
import pytest

from tests.dashboard.readmodel.scripted_run import scripted_run


@pytest.fixture
def run():
    with scripted_run() as moments:
        yield moments
