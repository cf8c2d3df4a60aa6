"""Fixtures for the extender core tests (no Django setup, no network)."""
import pytest

from extender_builders import World


@pytest.fixture
def world():
    """A fresh cache, DefaultAlgorithm, statuses, bind recorder and Extender."""
    return World()
