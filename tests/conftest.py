"""pytest configuration shared by the unit and simulation tests."""

import os
import random

import pytest


def pytest_configure(config: pytest.Config) -> None:
    """Choose the run's seed base once, on the controller, before xdist starts workers
    (they inherit the environment), so every worker derives the same per-test seeds and
    Icarus and Verilator runs of one testbench share a seed."""
    if not hasattr(config, "workerinput") and not os.environ.get("LOCKSTEP_SEED_BASE"):
        os.environ["LOCKSTEP_SEED_BASE"] = os.environ.get("SEED") or str(random.randrange(1, 2**31))


def pytest_report_header(config: pytest.Config) -> str:
    base = os.environ.get("LOCKSTEP_SEED_BASE")
    return f"lockstep: seed base {base} (replay the whole run with SEED={base})"


@pytest.fixture(scope="session")
def seed() -> int:
    """Base seed for randomised unit tests (override with SEED=n)."""
    return int(os.environ.get("SEED", "20261122"))
