"""The owner's tests' writer (the real writer thread, into the test's database) and the
owner on it; a module needing other options builds its own with `owned.new_owner`."""
import pytest

from dashboard.owner.projection import ProjectionWriter
from tests.dashboard.owner.owned import new_owner


@pytest.fixture
def writer():
    w = ProjectionWriter().start()
    yield w
    w.close()


@pytest.fixture
def owner(writer):
    return new_owner(writer)
