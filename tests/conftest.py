"""pytest configuration shared by the unit and simulation tests."""

import fcntl
import hashlib
import json
import os
import random
from pathlib import Path

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


#: Tests that run first (the longest single items: the documentation build, then the
#: simulation runs), so that the last minutes of a parallel run are short unit tests
#: and no worker waits alone on a long one (make test's tail was one idle core).
_FIRST = ("tests/test_docs.py::test_site_builds_without_warnings", "tests/test_sim.py::")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        return next((i for i, p in enumerate(_FIRST) if item.nodeid.startswith(p)), len(_FIRST))
    items.sort(key=rank)  # stable: the collection order within each group


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


@pytest.fixture(scope="session")
def lint(tmp_path_factory: pytest.TempPathFactory):
    """:func:`lockstep.gen.lint.lint_file`, run once per distinct input in a session.

    Many tests lint byte-identical files: the 332 registered testbenches share 157
    generated DUTs, and the committed ``hdl/`` files are some tests' default designs. The
    result is a function of the bytes linted (and of ``top``, ``timing`` and the extra
    files), so it is kept under a key of those in the session's temporary folder, shared by
    the pytest-xdist workers (a file lock per key: one worker lints, another waiting for the
    same key reads its result). A problem line names the path that was linted; a result
    reused for another path with the same bytes names the caller's path instead.
    """
    from lockstep.gen.lint import lint_file

    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    cache = root / "lint-cache"
    cache.mkdir(exist_ok=True)

    def run(path, top=None, extra=(), timing=False) -> list[str]:
        path = Path(path)
        h = hashlib.sha256(repr((top or path.stem, bool(timing), len(extra))).encode())
        for p in (path, *extra):
            h.update(b"\0" + Path(p).read_bytes())
        entry = cache / h.hexdigest()
        with open(entry.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if entry.exists():
                done = json.loads(entry.read_text())
            else:
                done = {"path": str(path), "problems": lint_file(path, top, extra, timing)}
                tmp = entry.with_suffix(f".tmp{os.getpid()}")
                tmp.write_text(json.dumps(done))
                os.replace(tmp, entry)
        return [ln.replace(done["path"], str(path)) for ln in done["problems"]]

    return run
