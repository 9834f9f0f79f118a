"""Testplans: one YAML file per block family, OpenTitan style (features -> tests -> coverage).

A family's plan lives next to its testbenches, ``verif/<family>/testplan.yml``::

    family: bfp
    title: Block floating point (spec 004)
    goals: {functional: 100, line: 95, toggle: 90}     # percent, checked in the report
    stages:                                              # ordered; every feature names one
      V1: directed tests of the patent's examples
      V2: every feature, random stimulus, both simulators
    features:
      - name: quantize.eq4_exponent
        stage: V1
        desc: Eq. 4 shared exponent from the block maximum
        tests: [bfp_quantize_*, bfp_quantize_table2]    # testbench names or fnmatch globs
        cover: [bfp.quantizer.exponent]                 # cover groups or points (prefixes)

The loader refuses unknown keys, unknown stages, goals outside 0..100 and test patterns
that match no registered testbench of the family, naming the feature. A registered
testbench that no feature lists is an error too: every test has a reason to exist.

:func:`feature_status` turns a regression's runs into each feature's verdict: ``pass``
when at least one of its tests ran and every run of them did what it must, ``fail`` when
any run failed, ``untested`` when none ran. ``fail`` and ``untested`` are shown red: a
feature with no passing test is not verified.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .registry import TESTBENCHES

__all__ = ["Feature", "Testplan", "TestplanError", "load", "load_all", "feature_status", "GOAL_KEYS"]

#: Coverage goals a plan may set (percent).
GOAL_KEYS = ("functional", "line", "branch", "toggle")
_PLAN_KEYS = {"family", "title", "goals", "stages", "features"}
_FEATURE_KEYS = {"name", "stage", "desc", "tests", "cover"}
VERIF = Path(__file__).resolve().parent


class TestplanError(ValueError):
    """A malformed testplan; the message names the file and the feature."""

    __test__ = False  # not a pytest class


@dataclass(frozen=True)
class Feature:
    """One planned feature.

    Attributes:
        name: unique within the plan.
        stage: one of the plan's stages.
        desc: what is verified.
        tests: testbench names the patterns matched (sorted).
        cover: cover group / point names (prefixes of point names).
    """

    name: str
    stage: str
    desc: str
    tests: tuple[str, ...]
    cover: tuple[str, ...]


@dataclass(frozen=True)
class Testplan:
    """A family's plan (see the module docstring for the file format)."""

    family: str
    title: str
    goals: dict[str, float]
    stages: dict[str, str]
    features: tuple[Feature, ...]
    path: Path

    def tests(self) -> set[str]:
        """Every testbench some feature lists."""
        return {t for f in self.features for t in f.tests}


def _fail(path: Path, where: str, why: str) -> TestplanError:
    return TestplanError(f"{path}: {where}: {why}")


def parse(data: Any, path: Path, family: str | None = None) -> Testplan:
    """Check and build a :class:`Testplan` from parsed YAML.

    Args:
        data: the YAML document.
        path: its file (for messages).
        family: expected family (the folder name), when known.

    Raises:
        TestplanError: naming the file, the feature and the rule broken.
    """
    if not isinstance(data, dict):
        raise _fail(path, "top level", "must be a mapping")
    extra = set(data) - _PLAN_KEYS
    if extra:  # YAML keys may be of any type (1, null, true): sort them by repr
        raise _fail(path, "top level", f"unknown key(s) {sorted(extra, key=repr)}; allowed {sorted(_PLAN_KEYS)}")
    fam = data.get("family")
    if not isinstance(fam, str) or (family is not None and fam != family):
        raise _fail(path, "family", f"must be the family's name {family!r}, got {fam!r}")
    goals = data.get("goals")
    goals = {} if goals is None else goals
    if not isinstance(goals, dict) or set(goals) - set(GOAL_KEYS):
        raise _fail(path, "goals", f"a mapping with keys from {GOAL_KEYS}, got {goals!r}")
    for k, v in goals.items():
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not 0 <= v <= 100:
            raise _fail(path, f"goals.{k}", f"a percentage in [0, 100], got {v!r}")
    stages = data.get("stages")
    if not isinstance(stages, dict) or not stages:
        raise _fail(path, "stages", "a non-empty mapping stage -> description")
    raw_features = data.get("features")
    if raw_features is not None and not isinstance(raw_features, list):
        raise _fail(path, "features", f"a list of features, got {type(raw_features).__name__}")
    family_tbs = sorted(n for n, tb in TESTBENCHES.items() if tb.family == fam)
    features = []
    seen: set[str] = set()
    for i, f in enumerate(raw_features or []):
        where = f"feature {i + 1}"
        if not isinstance(f, dict):
            raise _fail(path, where, "must be a mapping")
        name = f.get("name")
        if not isinstance(name, str) or not name:
            raise _fail(path, where, "needs a name")
        where = f"feature {name!r}"
        extra = set(f) - _FEATURE_KEYS
        if extra:
            raise _fail(path, where, f"unknown key(s) {sorted(extra, key=repr)}; allowed {sorted(_FEATURE_KEYS)}")
        if name in seen:
            raise _fail(path, where, "listed twice")
        seen.add(name)
        try:
            known = f.get("stage") in stages
        except TypeError:  # an unhashable stage (a list or a mapping) names no stage
            known = False
        if not known:
            raise _fail(path, where, f"stage {f.get('stage')!r} is not one of {list(stages)}")
        patterns = f.get("tests")
        if not isinstance(patterns, list) or not patterns:
            raise _fail(path, where, "needs a non-empty list of tests")
        tests: set[str] = set()
        for pat in patterns:
            hits = fnmatch.filter(family_tbs, str(pat))
            if not hits:
                raise _fail(path, where, f"test {pat!r} matches no registered {fam} testbench")
            tests.update(hits)
        cover = f.get("cover")
        cover = [] if cover is None else cover
        if not isinstance(cover, list) or not all(isinstance(c, str) and c for c in cover):
            raise _fail(path, where, "cover must be a list of cover group or point names")
        features.append(Feature(name, f["stage"], str(f.get("desc", "")), tuple(sorted(tests)), tuple(cover)))
    if not features:
        raise _fail(path, "features", "a plan needs at least one feature")
    plan = Testplan(fam, str(data.get("title", fam)), dict(goals), dict(stages), tuple(features), path)
    orphans = sorted(set(family_tbs) - plan.tests())
    if orphans:
        raise _fail(path, "tests", f"registered testbench(es) no feature lists: {orphans}")
    return plan


def load(path: Path | str) -> Testplan:
    """Load and check one testplan file (its folder name is the family).

    Raises:
        TestplanError: naming the file and the place: text that is not UTF-8 or not
            YAML (the line and column), nesting too deep to read, or a plan ``parse``
            refuses.
    """
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except UnicodeDecodeError as exc:
        raise _fail(path, f"byte {exc.start}", f"not UTF-8 text ({exc.reason})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        pos = getattr(exc, "position", None)  # a ReaderError (a control character) has no mark
        where = (f"line {mark.line + 1}, column {mark.column + 1}" if mark
                 else f"character {pos}" if pos is not None else "YAML")
        why = " ".join(str(getattr(exc, "problem", None) or exc).split())
        raise _fail(path, where, f"not valid YAML: {why}") from None
    except RecursionError:
        raise _fail(path, "YAML", "nested too deeply to read") from None
    return parse(data, path, family=path.parent.name)


def load_all() -> dict[str, Testplan]:
    """Every family's plan, keyed by family; a family with testbenches but no plan is an error."""
    plans = {p.parent.name: load(p) for p in sorted(VERIF.glob("*/testplan.yml"))}
    missing = sorted({tb.family for tb in TESTBENCHES.values()} - set(plans))
    if missing:
        raise TestplanError(f"no testplan for famil{'y' if len(missing) == 1 else 'ies'} {missing}: "
                            f"add verif/<family>/testplan.yml")
    return plans


def feature_status(plan: Testplan, runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each feature's verdict from a regression's runs.

    Args:
        plan: the family's plan.
        runs: one dict per run with ``testbench`` and ``ok``.

    Returns:
        One dict per feature: ``feature``, ``stage``, ``desc``, ``status`` (``pass`` /
        ``fail`` / ``untested``), ``passed`` / ``failed`` run counts, ``tests``, ``cover``.
    """
    out = []
    for f in plan.features:
        mine = [r for r in runs if r["testbench"] in f.tests]
        failed = sum(not r["ok"] for r in mine)
        passed = len(mine) - failed
        status = "fail" if failed else ("pass" if passed else "untested")
        out.append({"feature": f.name, "stage": f.stage, "desc": f.desc, "status": status,
                    "passed": passed, "failed": failed, "tests": list(f.tests), "cover": list(f.cover)})
    return out
