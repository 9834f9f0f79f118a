"""pytest configuration shared by the unit and simulation tests."""

import os

import pytest


@pytest.fixture(scope="session")
def seed() -> int:
    """Base seed for randomised unit tests (override with SEED=n)."""
    return int(os.environ.get("SEED", "20261122"))
