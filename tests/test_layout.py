"""The package layout: one package per family under models/, gen/ and verif/, no import
circles, builds keyed on a family's own code, and the documented import paths."""

from __future__ import annotations

import doctest
import importlib
import json
import shutil
from pathlib import Path

import pytest

from lockstep.verif import deps
from lockstep.verif.registry import TESTBENCHES
from lockstep.verif.runner import REPO, source_hash

FAMILIES = ("bfp", "sched", "sparse", "gemm", "host")
GRAPH = deps.graph(REPO)


def test_no_import_circles() -> None:
    assert GRAPH.cycles() == []


def test_cycle_detection_sees_a_deferred_import(tmp_path: Path) -> None:
    """The check can fail: a circle closed by an import inside a function is found."""
    for folder in deps.PACKAGES.values():
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "models" / "a.py").write_text("from .b import f\n")
    (tmp_path / "models" / "b.py").write_text("def f():\n    from .a import g\n")
    assert deps.ImportGraph(tmp_path).cycles() == [["lockstep.models.a", "lockstep.models.b"]]


@pytest.mark.parametrize("family", FAMILIES)
def test_family_packages_have_the_same_shape(family: str) -> None:
    for folder in ("models", "gen", "verif"):
        assert (REPO / folder / family / "__init__.py").is_file(), f"{folder}/{family}/ is not a package"
    assert (REPO / "models" / family / "params.py").is_file()
    assert (REPO / "verif" / family / "testplan.yml").is_file()


@pytest.mark.parametrize("family", FAMILIES)
def test_each_family_testplan_loads(family: str) -> None:
    """The plan and its exclusions parse (a colon in an unquoted description once made the
    sparse plan invalid YAML, found only by the coverage report at the end of its run)."""
    from lockstep.verif.testplan import load
    assert load(REPO / "verif" / family / "testplan.yml").features


def test_models_top_level_holds_only_shared_modules() -> None:
    top = sorted(p.stem for p in (REPO / "models").glob("*.py"))
    # record: what every family's record shares; the rest are the former paths, kept as aliases
    assert top == ["__init__", "formats", "host_lib", "host_pipe", "mx", "record"]
    users = {m for m, e in GRAPH.edges.items() for t in e
             if t in ("lockstep.models.formats", "lockstep.models.mx", "lockstep.models.host_lib",
                      "lockstep.models.host_pipe")}
    assert users == set(), "the former paths are for users' code only"


def _family_of(path: Path) -> str | None:
    rel = path.relative_to(REPO).parts
    return rel[1] if len(rel) > 2 and rel[0] in ("models", "gen", "verif") and rel[1] in FAMILIES else None


@pytest.mark.parametrize("family", FAMILIES)
def test_generators_reach_no_other_family(family: str) -> None:
    gens = {tb.generator.split(":")[0] for tb in TESTBENCHES.values() if tb.family == family}
    assert gens
    for module in gens:
        files = [GRAPH.files[m] for m in GRAPH.closure(module)]
        others = sorted(str(f.relative_to(REPO)) for f in files if _family_of(f) not in (None, family))
        assert others == [], f"{module} executes other families' code: {others}"
        assert REPO / "models" / family / "params.py" in files


def test_cached_import_statements_give_the_parsed_graph(tmp_path: Path) -> None:
    """The graph read through the statement cache (the repository's, and a corrupt one,
    which is ignored and rewritten) is the graph of a parse of every file."""
    fresh = deps.ImportGraph(REPO, cache=None)
    assert deps.ImportGraph(REPO).edges == fresh.edges
    for folder in deps.PACKAGES.values():
        shutil.copytree(REPO / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / deps.CACHE).parent.mkdir()
    (tmp_path / deps.CACHE).write_text("{not json")
    assert deps.ImportGraph(tmp_path).edges == fresh.edges
    assert deps.ImportGraph(tmp_path).edges == fresh.edges  # now from the rewritten cache
    texts = {f.read_text() for f in fresh.files.values()}
    assert len(json.loads((tmp_path / deps.CACHE).read_text())) == len(texts)


def test_a_record_change_rebuilds_its_family_only(tmp_path: Path) -> None:
    # each rebuild of the graph reparses only the file just edited (the statement cache
    # under tmp_path keeps the others' by their text)
    for folder in deps.PACKAGES.values():
        shutil.copytree(REPO / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    gens = {tb.generator: tb.family for tb in TESTBENCHES.values()}
    before = {g: source_hash(g, tmp_path) for g in gens}
    assert before == {g: source_hash(g, REPO) for g in gens}  # the key names files relative to the root
    for family in FAMILIES:
        record = tmp_path / "models" / family / "params.py"
        record.write_text(record.read_text() + "\n# changed\n")
        deps.graph.cache_clear()
        after = {g: source_hash(g, tmp_path) for g in gens}
        changed = {gens[g] for g in gens if after[g] != before[g]}
        assert changed == {family}, f"changing {family}'s record rebuilds {sorted(changed)}"
        before = after
    shared = tmp_path / "models" / "record.py"
    shared.write_text(shared.read_text() + "\n# changed\n")
    deps.graph.cache_clear()
    assert all(source_hash(g, tmp_path) != before[g] for g in gens), "the shared record module keys every build"
    deps.graph.cache_clear()


def test_unknown_generator_module_is_an_error() -> None:
    with pytest.raises(ValueError, match="no module lockstep.gen.nope"):
        source_hash("lockstep.gen.nope:emit", REPO)


def test_documented_import_paths() -> None:
    """What the README and the family pages show, and the former flat paths."""
    from lockstep.models import bfp, gemm, host, mx, sched, sparse
    from lockstep.models.formats import BfpFormat, FabricParams, GemmParams, HostParams, MxParams, SparseParams

    assert bfp.BfpFormat is BfpFormat and bfp.MxParams is MxParams and sched.FabricParams is FabricParams
    assert sparse.SparseParams is SparseParams and gemm.GemmParams is GemmParams and host.HostParams is HostParams
    assert bfp.mx_quantize is mx.mx_quantize and bfp.mx is mx
    assert callable(gemm.CacheSim) and callable(sparse.stu_job) and callable(sched.execute)
    for old, new in (("mx", "bfp.mx"), ("host_lib", "host.lib"), ("host_pipe", "host.pipe")):
        assert importlib.import_module(f"lockstep.models.{old}") is importlib.import_module(f"lockstep.models.{new}")


def test_docstring_examples_of_every_model_module() -> None:
    """Every example in a golden model's docstrings runs and prints what it shows."""
    attempted, failed = {}, {}
    for name in sorted(m for m in GRAPH.files if m.startswith("lockstep.models")):
        res = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
        attempted[name], failed[name] = res.attempted, res.failed
    assert {m: f for m, f in failed.items() if f} == {}
    assert attempted["lockstep.models.bfp.core"] > 20 and attempted["lockstep.models.bfp.mx"] > 5
    assert attempted["lockstep.models.sched.core"] >= 2 and attempted["lockstep.models.bfp"] >= 2
