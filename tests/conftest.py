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


_TRANSACTIONS: dict[str, int] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Collect the transactions each simulation run checked (tests/test_sim.py records them)."""
    if report.when == "call":
        props = dict(report.user_properties)
        if "transactions" in props:
            _TRANSACTIONS[report.nodeid] = int(props["transactions"] or 0)


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    """The total the issue measures depth by: transactions checked by the simulation runs."""
    if _TRANSACTIONS and not hasattr(config, "workerinput"):
        total = sum(_TRANSACTIONS.values())
        tp = sum(v for k, v in _TRANSACTIONS.items() if "_tp-" in k)
        terminalreporter.write_line(f"lockstep: {total:,} transactions checked by {len(_TRANSACTIONS)} simulation runs "
                                    f"({tp:,} of them in throughput mode)")
