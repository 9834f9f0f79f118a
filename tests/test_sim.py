"""Every registered testbench on each simulator (the registry is the list).

Environment (set by ``make test`` / ``make regress``):
    TIER: ``quick`` (default) or ``full`` (adds the full-tier testbenches).
    SIMS: comma-separated simulators (default: all), or ``one``: each testbench on one
        simulator (``make test``, see :func:`one_sim`); ``make regress`` runs both.
    SEEDS: seeds per testbench and simulator (default 1).
    TESTS: comma-separated testbench names or globs (default: all of the tier).
    LOCKSTEP_COVERAGE: ``1`` builds Verilator with code coverage (``make coverage``).
    LOCKSTEP_SEED_BASE: per-run base (tests/conftest.py); seed i of a testbench is derived
        from it, the same on every simulator, so their results can be compared.
"""

import fnmatch
import os

import pytest

from lockstep.verif.registry import SIMULATORS, TESTBENCHES, quick_seed
from lockstep.verif.runner import run

TIER = os.environ.get("TIER", "quick")
ONE_SIM = os.environ.get("SIMS") == "one"
SIMS = list(SIMULATORS) if ONE_SIM else [s for s in os.environ.get("SIMS", ",".join(SIMULATORS)).split(",") if s]
SEEDS = int(os.environ.get("SEEDS", "1"))
TESTS = [t for t in os.environ.get("TESTS", "").split(",") if t]
COVERAGE = os.environ.get("LOCKSTEP_COVERAGE") == "1"
if TIER not in ("quick", "full"):
    raise ValueError(f"TIER={TIER!r}: use quick or full")
for _s in SIMS:
    if _s not in SIMULATORS:
        raise ValueError(f"SIM={_s!r}: use one of {SIMULATORS}")
for _t in TESTS:
    if not fnmatch.filter(TESTBENCHES, _t):
        raise ValueError(f"TESTS={_t!r} matches no registered testbench (make list)")



def one_sim(names: list[str]) -> dict[str, tuple[str, ...]]:
    """The simulators of each testbench in ``make test`` (``SIMS=one``), which runs each
    quick testbench once: a per-edge one on Icarus (its run is Python on every edge, so
    a Verilator build would be most of its time), a throughput one on Verilator (the
    hardware's speed: its depth). A design with testbenches of both kinds is simulated on
    both simulators; so is the first per-edge testbench (by name) of each family, which
    runs on Verilator too. ``make regress`` runs every quick testbench on both, and the
    throughput tests (tests/test_*throughput.py) check both simulators see the same
    stream."""
    first: dict[str, str] = {}
    for n in sorted(names):
        if TESTBENCHES[n].mode != "throughput":
            first.setdefault(TESTBENCHES[n].family, n)
    out = {}
    for n in names:
        tb = TESTBENCHES[n]
        want = {"verilator" if tb.mode == "throughput" else "icarus"}
        if first.get(tb.family) == n:
            want = set(SIMULATORS)
        out[n] = tuple(s for s in SIMULATORS if s in want and s in tb.sims) or (tb.default_sim,)
    return out


_SELECTED = [tb.name for tb in TESTBENCHES.values()
             if (tb.tier == "quick" or TIER == "full") and (not TESTS or any(fnmatch.fnmatch(tb.name, t) for t in TESTS))]
_SIMS_OF = one_sim(_SELECTED) if ONE_SIM else {n: tuple(s for s in SIMS if s in TESTBENCHES[n].sims) for n in _SELECTED}
CASES = [(name, sim, i) for name in _SELECTED for i in range(SEEDS) for sim in _SIMS_OF[name]]


def case_seed(name: str, index: int) -> int:
    """Seed ``index`` of testbench ``name`` in this run (simulator independent)."""
    return quick_seed(name, index, int(os.environ.get("LOCKSTEP_SEED_BASE", "1")))


@pytest.mark.sim
@pytest.mark.parametrize("name,sim,index", CASES, ids=[f"{n}-{s}-{i}" for n, s, i in CASES])
def test_testbench(name: str, sim: str, index: int, record_property) -> None:
    """Build (cached) and run; a failure message carries the exact replay command."""
    seed = int(os.environ["SEED"]) if os.environ.get("SEED") else case_seed(name, index)
    # recorded first, so a run that cannot even build still reports its replay command
    for key, value in (("testbench", name), ("sim", sim), ("seed", seed), ("expect_fail", TESTBENCHES[name].expect_fail),
                       ("repro", f"make sim TEST={name} SIM={sim} SEED={seed}")):
        record_property(key, value)
    res = run(name, sim, seed=seed, coverage=COVERAGE)
    for key, value in (("ok", res.ok), ("passed", res.passed), ("cycles", res.cycles), ("wall", round(res.wall, 3)),
                       ("blocks", res.summary.get("blocks", 0)),
                       ("transactions", res.summary.get("transactions", res.summary.get("blocks", 0))),
                       ("mode", TESTBENCHES[name].mode), ("mismatches", res.summary.get("mismatches", 0)),
                       ("coverage", res.summary.get("functional_coverage")), ("results", str(res.results)),
                       ("rtl", str(res.rtl))):
        record_property(key, value)
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
