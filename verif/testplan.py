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

Code coverage points that no stimulus can reach for some configuration are listed beside
the plan, in ``verif/<family>/coverage_exclusions.yml``, each with its reason::

    - kind: toggle                  # line | branch | toggle
      module: sched_ring            # glob on the generated module (default: all of the family's)
      signal: "*_unused*"           # toggle: glob on the signal and bit, ``name[3]``
      bits: "b % cnt_bits >= 16"    # optional, toggle: a condition on the bit index b (and the parameters)
      reason: bits the linter is told are unused (Verilator's --unused-regexp)
    - kind: branch
      source: "big_e > 127"         # line / branch: a regular expression the Verilog line contains
      point: elsif                  # optional, line / branch: glob on the point's name on that line
      when: "w - 2 + 2 ** (e - 1) <= 127"   # optional: only configurations whose parameters satisfy it
      reason: ...

The report (``lockstep.verif.report.analyse``) counts matched points apart from the
goals and lists them; an excluded point that a run hits fails the report: the reason given
for it was wrong.

:func:`feature_status` turns a regression's runs into each feature's verdict: ``pass``
when at least one of its tests ran and every run of them did what it must, ``fail`` when
any run failed, ``untested`` when none ran. ``fail`` and ``untested`` are shown red: a
feature with no passing test is not verified.
"""

from __future__ import annotations

import ast
import dataclasses
import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .covreport import point_bit
from .registry import TESTBENCHES

__all__ = ["Feature", "Exclusion", "Testplan", "TestplanError", "load", "load_all", "feature_status",
           "parse_exclusions", "GOAL_KEYS"]

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
class Exclusion:
    """A code coverage point (or a family of them) no stimulus can reach, and why.

    Attributes:
        kind: ``line``, ``branch`` or ``toggle``.
        module: glob on the generated module's name (its file stem).
        signal: toggle only: glob on Verilator's point name without the direction
            (``lane_split6_xi[3]``).
        source: line / branch only: a regular expression searched in the Verilog line.
        reason: why no stimulus can reach it.
        point: line / branch only: glob on Verilator's name of the point on that line
            (``if``, ``else``, ``elsif``, ``block``...); default all of them.
        when: a condition on the module's generator parameters (names of its parameter
            record, integers, arithmetic, comparisons, ``and``/``or``/``not``): the
            exclusion holds only for the configurations that satisfy it.
        bits: toggle only: a condition of the same kind on the point's bit index ``b``
            (``name[b]``) and the parameters; a point without an index does not match.
    """

    kind: str
    module: str
    signal: str | None
    source: str | None
    reason: str
    when: str | None = None
    point: str = "*"
    bits: str | None = None

    def matches(self, kind: str, module: str, name: str, line: str, params: dict[str, Any] | None = None) -> bool:
        """Does this exclusion cover the point ``name`` (toggle) / on source ``line`` of a
        module generated with ``params``?

        Raises:
            TestplanError: ``when`` names a parameter the module does not have.
        """
        if kind != self.kind or not fnmatch.fnmatchcase(module, self.module):
            return False
        if self.signal is not None:
            hit = fnmatch.fnmatchcase(name.rsplit(":", 1)[0], self.signal)
            if hit and self.bits is not None:
                bit = point_bit(name)
                hit = bit is not None and bool(_eval_when(self.bits, {**(params or {}), "b": bit[1]}, module))
        else:
            hit = re.search(str(self.source), line) is not None and fnmatch.fnmatchcase(name, self.point)
        return hit and (self.when is None or bool(_eval_when(self.when, params or {}, module)))


_WHEN_NODES = (ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.BinOp, ast.Add,
               ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.Pow, ast.Compare, ast.Eq, ast.NotEq, ast.Lt, ast.LtE,
               ast.Gt, ast.GtE, ast.Name, ast.Load, ast.Constant)


def _check_when(expr: str) -> ast.Expression:
    """Parse a ``when`` condition; ValueError unless it is made of the allowed pieces."""
    tree = ast.parse(expr, mode="eval")
    for node in ast.walk(tree):
        if not isinstance(node, _WHEN_NODES) or (isinstance(node, ast.Constant) and
                                                  not isinstance(node.value, (int, str))):
            raise ValueError(f"{type(node).__name__} is not allowed (names, integers, strings, arithmetic, "
                             f"comparisons, and/or/not)")
    return tree


def _eval_when(expr: str, params: dict[str, Any], module: str) -> Any:
    tree = _check_when(expr)
    missing = sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - set(params))
    if missing:
        raise TestplanError(f"exclusion when={expr!r}: {module} has no parameter(s) {missing}")
    return eval(compile(tree, "<when>", "eval"), {"__builtins__": {}}, dict(params))  # checked above


@dataclass(frozen=True)
class Testplan:
    """A family's plan (see the module docstring for the file format)."""

    family: str
    title: str
    goals: dict[str, float]
    stages: dict[str, str]
    features: tuple[Feature, ...]
    path: Path
    exclusions: tuple[Exclusion, ...] = ()

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


_EXCL_KEYS = {"kind", "module", "signal", "source", "reason", "when", "point", "bits"}


def parse_exclusions(data: Any, path: Path) -> tuple[Exclusion, ...]:
    """Check and build the exclusions of a ``coverage_exclusions.yml`` (a list).

    Raises:
        TestplanError: naming the file, the entry and the rule broken (unknown keys, a
            kind other than line / branch / toggle, ``signal`` on a line point or
            ``source`` on a toggle, a bad regular expression, no reason).
    """
    if data is None:
        return ()
    if not isinstance(data, list):
        raise _fail(path, "top level", "must be a list of exclusions")
    out = []
    for i, d in enumerate(data):
        where = f"exclusion {i + 1}"
        if not isinstance(d, dict):
            raise _fail(path, where, "must be a mapping")
        extra = set(d) - _EXCL_KEYS
        if extra:
            raise _fail(path, where, f"unknown key(s) {sorted(extra, key=repr)}; allowed {sorted(_EXCL_KEYS)}")
        kind, module = d.get("kind"), d.get("module", "*")
        if kind not in ("line", "branch", "toggle"):
            raise _fail(path, where, f"kind must be line, branch or toggle, got {kind!r}")
        if not isinstance(module, str) or not module:
            raise _fail(path, where, f"module must be a glob, got {module!r}")
        want, other = ("signal", "source") if kind == "toggle" else ("source", "signal")
        pattern = d.get(want)
        if other in d or not isinstance(pattern, str) or not pattern:
            raise _fail(path, where, f"a {kind} exclusion names its points with {want!r} (a "
                        f"{'glob' if want == 'signal' else 'regular expression'}), not {other!r}")
        if want == "source":
            try:
                re.compile(pattern)
            except re.error as exc:
                raise _fail(path, where, f"source {pattern!r} is not a regular expression: {exc}") from None
        reason = d.get("reason")
        if not isinstance(reason, str) or len(reason.split()) < 3:
            raise _fail(path, where, "needs a reason (a sentence saying why no stimulus reaches it)")
        when = d.get("when")
        if when is not None:
            try:
                _check_when(when if isinstance(when, str) else "")
            except (SyntaxError, ValueError) as exc:
                raise _fail(path, where, f"when {when!r} is not a condition on the parameters: {exc}") from None
        bits = d.get("bits")
        if bits is not None:
            if kind != "toggle":
                raise _fail(path, where, "bits is a condition on a toggle point's bit index, not on a "
                            f"{kind} point")
            try:
                _check_when(bits if isinstance(bits, str) else "")
            except (SyntaxError, ValueError) as exc:
                raise _fail(path, where, f"bits {bits!r} is not a condition on the bit index b: {exc}") from None
        point = d.get("point", "*")
        if not isinstance(point, str) or not point or (kind == "toggle" and "point" in d):
            raise _fail(path, where, f"point is a glob on a line or branch point's name, got {point!r}")
        out.append(Exclusion(kind, module, pattern if want == "signal" else None,
                             pattern if want == "source" else None, " ".join(reason.split()), when, point, bits))
    return tuple(out)


def _read_yaml(path: Path) -> Any:
    """A YAML file's document; a TestplanError names the place of any problem."""
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
    return data


def load(path: Path | str) -> Testplan:
    """Load and check one testplan file (its folder name is the family) and the
    ``coverage_exclusions.yml`` beside it, if any.

    Raises:
        TestplanError: naming the file and the place: text that is not UTF-8 or not
            YAML (the line and column), nesting too deep to read, or a plan ``parse``
            or exclusions :func:`parse_exclusions` refuses.
    """
    path = Path(path)
    plan = parse(_read_yaml(path), path, family=path.parent.name)
    excl = path.parent / "coverage_exclusions.yml"
    if excl.exists():
        plan = dataclasses.replace(plan, exclusions=parse_exclusions(_read_yaml(excl), excl))
    return plan


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
