"""Every registered quick-tier testbench on both simulators (the registry is the list)."""

import os

import pytest

from lockstep.verif.registry import SIMULATORS, TESTBENCHES
from lockstep.verif.runner import run

TIER = os.environ.get("TIER", "quick")
CASES = [
    (tb.name, sim)
    for tb in TESTBENCHES.values()
    if tb.tier == "quick" or TIER == "full"
    for sim in SIMULATORS
]


@pytest.mark.sim
@pytest.mark.parametrize("name,sim", CASES, ids=[f"{n}-{s}" for n, s in CASES])
def test_testbench(name: str, sim: str) -> None:
    """Build (cached) and run; a failure message carries the exact replay command."""
    seed = int(os.environ["SEED"]) if os.environ.get("SEED") else None
    res = run(name, sim, seed=seed)
    assert res.ok, f"{res.line()}\n  results: {res.results}\n  replay:  {res.repro()}"
    if not TESTBENCHES[name].expect_fail:
        assert res.summary.get("blocks", 0) > 0, f"no transaction was checked: {res.results}"
        assert res.cycles > 0, f"no simulated cycles reported: {res.results}"
    else:
        assert res.summary.get("mismatches", 0) > 0, (
            f"{name} was expected to fail on scoreboard mismatches: {res.results}"
        )


def test_registry_is_sound() -> None:
    """Names unique, every testbench runs on both simulators, generators resolvable."""
    import importlib

    assert TESTBENCHES, "no testbench registered"
    for tb in TESTBENCHES.values():
        mod, func = tb.generator.split(":")
        assert callable(getattr(importlib.import_module(mod), func)), tb.generator
        importlib.import_module(tb.test_module.rsplit(".", 1)[0])
